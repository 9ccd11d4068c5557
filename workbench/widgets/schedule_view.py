"""ScheduleView: when each op runs, per replica and IPU, from the last run's trace or the static schedule."""
from __future__ import annotations

from typing import Any, Iterable, Optional

from workbench.analysis.static_schedule import sequence_regions, static_schedule
from workbench.ir.device import Device, device_for

from .figures import schedule_figure
from .figures.schedule_bins import BINNED_ABOVE, scope_groups
from .figures.schedule_figure import has_seconds
from .listeners import subscribe_weakly
from .view import View


class ScheduleView(View):
    """A timeline per replica and IPU: the ops of ``session.last_trace`` in simulated cycles (or in
    measured seconds, ``unit="seconds"``, when the session profiled the run), coloured by kind
    (compute, host IO, IPU copies, collectives, Streaming Memory, call sites), with ``in_sequence``
    regions shaded behind. Before any run, and for an Ir alone, the static schedule
    (``analysis.static_schedule``) on ``device`` (the Session's, else 'ipu_model').

    The selected op (``selection.op``, else ``selection.step``) is outlined in red; clicking a bar
    selects its op. While the session is stepped, the op each replica stands before is outlined in
    black (it follows the session's ``"step"`` events).

    >>> session.profile = True
    >>> session.run(inputs)
    >>> ScheduleView(session, unit="seconds")
    """

    live_kinds = frozenset({"op_added", "op_changed", "graph_built", "graph_discarded", "attached",
                            "run_started", "run_finished", "step"})

    def __init__(self, source: Any, device: Optional[Device] = None, *, unit: str = "cycles", **options):
        if unit not in ("cycles", "seconds"):
            raise ValueError(f"unit must be 'cycles' or 'seconds', got {unit!r}")
        self._device = device
        self.unit = unit
        self.stop = None
        self.events: list = []
        self._step_handle = None
        super().__init__(source, **options)
        if self.session is not None:
            self._step_handle = subscribe_weakly(self.session.events, self._heard)
        self.selection.observe(lambda change: self.redraw(), names=["op", "step", "breakpoints"])

    @property
    def device(self) -> Device:
        if self._device is not None:
            return self._device
        return self.session.device if self.session is not None else device_for("ipu_model")

    # ----- data -----
    def refresh(self, kinds: Iterable[str] = ()) -> None:
        """A step alone changes only the outlined op: redraw without recomputing the schedule."""
        kinds = frozenset(kinds)
        if kinds and kinds <= {"step"} and self.error is None and self.version > 0:
            self.version += 1
            self.redraw()
        else:
            super().refresh(kinds)

    def _compute(self) -> None:
        trace = self.session.last_trace if self.session is not None else None
        if trace is not None and trace.has_events:
            self.events, self.clock_hz, self.static = list(trace.events), trace.clock_hz, False
        else:
            schedule = static_schedule(self.ir, self.device)
            self.events, self.clock_hz, self.static = schedule.events, schedule.clock_hz, True
        self.regions = sequence_regions(self.ir)
        binned = sum(len(event.ipus) for event in self.events) > BINNED_ABOVE
        self.groups = scope_groups(dict.fromkeys(event.op.graph for event in self.events),  # once, not per redraw
                                   op_runs=binned)

    def static_label(self) -> str:
        """What the static schedule stands in for: no run yet, or a run still in progress."""
        if self.session is not None and self.session.last_trace is not None:
            return "Static schedule (the last run kept only its summary: see session.trace_event_limit)"
        if self.session is not None and self.session.run_count > 0:
            return "Static schedule (the run in progress has no trace yet)"
        return "Static schedule (no run yet)"

    @property
    def has_seconds(self) -> bool:
        """Whether the shown events have measured seconds (a run with ``session.profile`` on)."""
        return has_seconds(self.events)

    @property
    def shown_unit(self) -> str:
        """``unit``, or cycles when seconds were asked for and the events have none."""
        return self.unit if self.unit == "cycles" or self.has_seconds else "cycles"

    def build_figure(self):
        title = None
        if self.shown_unit != self.unit:
            what = self.static_label() if self.static else "Schedule of the last run (not profiled)"
            title = f"{what}: simulated cycles; seconds need a run with session.profile = True"
        return schedule_figure(self.events, unit=self.shown_unit, clock_hz=self.clock_hz, regions=self.regions,
                               selected=self.selected_events(), current=self.current_events(),
                               breakpoints=self.breakpoint_events(), title=title,
                               static_label=self.static_label(), groups=self.groups)

    def selected_events(self) -> list[int]:
        """Indices of the events of the selected op, else of the selected step."""
        op, step = self.selection.op, self.selection.step
        if op is not None:
            return [i for i, event in enumerate(self.events) if event.op is op]
        if step is not None:
            return [i for i, event in enumerate(self.events) if event.step == step]
        return []

    def breakpoint_events(self) -> list[int]:
        """Indices of the events of ops that a breakpoint of the followed stepper stops before."""
        if not self.selection.breakpoints:
            return []
        stops: dict = {}
        return [i for i, event in enumerate(self.events)
                if stops.setdefault(event.op, self.selection.stops_before(event.op))]

    def current_events(self) -> list[int]:
        """Indices of the events of the op each replica of a stepped run stands before: the same step
        and repeat iterations in that replica (any replica in the static schedule)."""
        stop = self.stop
        if stop is None or stop.status not in ("ready", "paused"):
            return []
        wanted = {(state.replica, state.position.flat_index, state.position.iterations)
                  for state in stop.replicas if state.position is not None}
        if self.static:
            steps = {step for _, step, _ in wanted}
            return [i for i, event in enumerate(self.events) if event.step in steps]
        return [i for i, event in enumerate(self.events) if (event.replica, event.step, event.iterations) in wanted]

    def set_unit(self, unit: str) -> None:
        """Show 'cycles' or 'seconds'."""
        if unit not in ("cycles", "seconds"):
            raise ValueError(f"unit must be 'cycles' or 'seconds', got {unit!r}")
        self.unit = unit
        self.redraw()

    # ----- interaction -----
    def _heard(self, kind: str, payload: Any) -> None:
        if kind == "step":
            self.stop = payload

    def _click(self, key: Any) -> None:
        if isinstance(key, int) and 0 <= key < len(self.events):
            event = self.events[key]
            self.selection.step = event.step
            self.selection.op = event.op

    def _controls(self) -> list:
        import ipywidgets

        toggle = ipywidgets.ToggleButtons(options=[("simulated cycles", "cycles"), ("seconds (profiled runs)", "seconds")],
                                          value=self.unit, style={"button_width": "170px"})
        toggle.observe(lambda change: self.set_unit(change["new"]), names="value")
        return [toggle]

    def close(self) -> None:
        super().close()
        if self._step_handle is not None:
            self.session.events.unsubscribe(self._step_handle)
            self._step_handle = None

    def __repr__(self) -> str:
        what = "static schedule" if getattr(self, "static", True) else "last run"
        return f"ScheduleView({self.ir!r}: {what}, {len(self.events)} op executions)"
