"""SessionStepperView: buttons over a session's stepper, where the run stands, and the live values."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from workbench.analysis.gradient_names import gradient_sources, gradient_title, name_matches
from workbench.ir import Op, Tensor

from .style import count_of, text
from .figures.replica_figure import VALUE_ELEMENTS, format_value
from .listeners import subscribe_weakly
from .live import DEFAULT_WINDOW, Scheduler
from .selection import Selection
from .stepper_inputs import stepper_inputs
from .view import display_bundle, source_bundle

COMMANDS = ("step", "step over", "step out", "continue", "run to", "reset")
ERROR_STYLE = "color:#C00000;font-family:monospace;white-space:pre-wrap"
TABLE_STYLE = "border-collapse:collapse;font-family:monospace;font-size:12px;line-height:1.35"
# Lines of the values as close as their text needs: an ipywidgets HTML widget sets every line 28 px apart
VALUES_STYLE = "line-height:1.35"
CELL_STYLE = "border:1px solid #D9D9D9;padding:2px 6px;text-align:left;vertical-align:top"
VALUE_STYLE = CELL_STYLE + ";white-space:pre"  # a summary's short lines as it breaks them, never wrapped: the
# tensor's column, which breaks after each scope, gives way instead



@dataclass(frozen=True, slots=True)
class LiveRow:
    """One live tensor at a stop: its name, graph, type, whether the next op reads it, and its value
    in each replica as text (None where that replica's call stack does not hold it)."""

    name: str
    graph: str
    spec: str
    read_next: bool
    values: tuple[Optional[str], ...]


def live_rows(stop: Any, sources: Mapping[Tensor, Tensor] = MappingProxyType({})) -> list[LiveRow]:
    """The rows of the live-tensor table at ``stop`` (a ``Stop``), outermost graph first; a gradient whose
    source is in ``sources`` (``gradient_sources``) named by it, any other by the tensor it is the gradient of,
    then by its own name: '∂ layer0.qkv (Gradient___ws_0)', '∂ relu (Gradient___relu)' (``gradient_title``)."""
    if stop is None:
        return []
    inputs = set(stop.op.inputs) if stop.op is not None else set()
    return [LiveRow(gradient_title(live.tensor, sources), live.graph.label, f"{live.tensor.dtype.name}{list(live.tensor.shape)}",
                    live.tensor in inputs, tuple(None if value is None else value_text(value) for value in live.values))
            for live in stop.live]


def value_text(value: Any) -> str:
    """A live value as the table shows it: whole when small, else its mean, least and largest, one a line (its
    type and shape are in the tensor's cell): short lines that a narrow column never wraps."""
    value = np.asarray(value)
    if value.size <= VALUE_ELEMENTS or value.dtype.kind not in "biuf":
        return format_value(value)
    as_float = value.astype(np.float64)
    return f"mean {as_float.mean():.4g}\nmin {as_float.min():.4g}\nmax {as_float.max():.4g}"


def describe_stop(stop: Any) -> str:
    """Where a stepped run stands, in a line of plain text that follows its status."""
    if stop is None:
        return "the first command starts a stepped run"
    if stop.status == "finished":
        return f"after {count_of(stop.actions, 'step')} (each an op run or a call entered): the outputs are ready"
    if stop.status in ("failed", "abandoned"):
        return "call reset to start again"
    position = stop.position
    text = (f"before {stop.op.type} {stop.op.name!r} in graph {position.graph.label!r} "
            f"(op {position.index} of its graph, step {position.flat_index} of the flattened schedule)")
    for location in position.frames:
        if location.kind == "repeat":
            text += f", iteration {location.iteration + 1} of {location.repeat_count} of {location.graph.label!r}"
    if stop.breakpoint is not None:
        text += f", at {stop.breakpoint}"
    for state in stop.replicas[1:]:
        if state.position is None:
            text += f"; replica {state.replica} has finished"
        elif state.position.op is not position.op or state.waiting:
            text += f"; replica {state.replica} is before {state.position.op.name!r}"
            if state.waiting:
                text += f", waiting in {state.waiting}"
    return text


VALUES_WIDTH = 340  # pixels the live-value table takes beside the picture, at least
OTHER_ROWS_SHOWN = 20  # other live tensors shown with their values when a filter picks them
OTHER_NAMES_LISTED = 60  # other live tensors named (without values) while no filter is typed
MADE_NAMES_LISTED = 6  # outputs of the next op named (a call's may be dozens)


def table_html(rows: Sequence[LiveRow], replicas: int, filter_text: str = "", made_next: Sequence[str] = (),
               graph: str = "") -> str:
    """The live tensors as HTML, every name escaped: first the next op's inputs with their values in every
    replica (and the outputs it will make, ``made_next``, named as the rows are), then the other live tensors
    collapsed to their names; those whose name or graph contains ``filter_text`` are shown with their values (at
    most ``OTHER_ROWS_SHOWN``): a gradient is found by its own name and by what it is of. A tensor of another graph
    than ``graph`` (the next op's) says which."""
    if not rows and not made_next:
        return "<p><i>no live tensors</i></p>"
    head = "".join(f"<th style='{CELL_STYLE}'>{text(h)}</th>"
                   for h in ["tensor", *(f"replica {r}" for r in range(replicas))])

    def table(shown: Sequence[LiveRow]) -> str:
        body = "".join(f"<tr><td style='{CELL_STYLE}'>{_tensor_cell(row, graph)}</td>" + "".join(
            f"<td style='{VALUE_STYLE}'>{text('—' if v is None else v)}</td>" for v in row.values) + "</tr>"
            for row in shown)
        return f"<table style='{TABLE_STYLE}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    read = [row for row in rows if row.read_next]
    others = [row for row in rows if not row.read_next]
    parts = ["<p style='margin:4px 0'><b>read by the next op</b></p>", table(read) if read else "<p><i>none</i></p>"]
    if made_next:
        more = f", … {len(made_next) - MADE_NAMES_LISTED} more" if len(made_next) > MADE_NAMES_LISTED else ""
        parts.append(f"<p style='margin:4px 0'><b>made by the next op</b>: "
                     f"{text(', '.join(made_next[:MADE_NAMES_LISTED]))}{more}</p>")
    needle = filter_text.strip().lower()
    if needle:
        picked = [row for row in others if name_matches(needle, row.name) or name_matches(needle, row.graph)]
        more = f", the first {OTHER_ROWS_SHOWN} shown" if len(picked) > OTHER_ROWS_SHOWN else ""
        parts.append(f"<p style='margin:4px 0'><b>{count_of(len(picked), 'other live tensor')} matching "
                     f"{text(filter_text.strip())!r}</b>{more}</p>")
        if picked:
            parts.append(table(picked[:OTHER_ROWS_SHOWN]))
    elif others:
        names = ", ".join(text(row.name) for row in others[:OTHER_NAMES_LISTED])
        more = f", … {len(others) - OTHER_NAMES_LISTED} more" if len(others) > OTHER_NAMES_LISTED else ""
        parts.append(f"<details><summary>{count_of(len(others), 'other live tensor')} (type in the filter for "
                     f"their values)</summary><p style='font-family:monospace;font-size:11px'>{names}{more}</p>"
                     f"</details>")
    return f"<div style='{VALUES_STYLE}'>{''.join(parts)}</div>"


def _tensor_cell(row: LiveRow, graph: str = "") -> str:
    """A tensor's name (breakable after each scope's ``/``), its type under it in grey, and its graph where it
    is not ``graph`` (the next op's): in one narrow column, so that the table fits beside the picture."""
    name = "/<wbr>".join(text(part) for part in row.name.split("/"))
    where = "" if row.graph == graph else f" in {text(row.graph)}"
    return f"{name}<br><span style='color:#595959'>{text(row.spec)}{where}</span>"


def outputs_html(outputs: Mapping[Any, Any]) -> str:
    """The host outputs of a finished run, one row per stream."""
    rows = "".join(f"<tr><td style='{CELL_STYLE}'>{text(stream.name)}</td>"
                   f"<td style='{CELL_STYLE}'>{text(format_value(value))}</td></tr>"
                   for stream, value in outputs.items())
    return (f"<table style='{TABLE_STYLE}'><thead><tr><th style='{CELL_STYLE}'>output stream</th>"
            f"<th style='{CELL_STYLE}'>value</th></tr></thead><tbody>{rows}</tbody></table>") if rows else ""


class SessionStepperView:
    """Step a session's run from buttons: step (into calls), step over, step out, continue (to the
    next breakpoint), run to an op (by name or type, or the selected op), reset; a breakpoint button
    toggles one at the selected op. Shows where the run stands, the live tensors with their values
    in every replica (the next op's inputs in bold), and the outputs once it finishes. ``inputs`` are keyed
    by stream or stream name, or a PopART ``PyStepIO``; without them it steps with zeros and says so.

    Each stop selects the next op in the shared ``selection``, so a GraphView and a ScheduleView
    sharing it highlight that op; ``views`` are shown under the controls (by default a GraphView and
    a ScheduleView of the session, sharing the selection). A command that fails shows its error in
    the view (``message``, ``error``) instead of raising.

    >>> with popxl.Session(ir, "ipu_model") as session:
    ...     view = SessionStepperView(session, {x_stream: data})
    ...     view  # click step; or from code: view.step(), view.run_to("matmul")
    """

    def __init__(self, session: Any, inputs: Any = None, *, stepper: Any = None,
                 selection: Optional[Selection] = None, views: Optional[Sequence[Any]] = None,
                 downcast_inputs: bool = True, live: bool = True, window: float = DEFAULT_WINDOW,
                 scheduler: Optional[Scheduler] = None):
        if not (hasattr(session, "stepper") and hasattr(session, "events")):
            raise TypeError(f"SessionStepperView needs a popxl.Session, got {type(session).__name__}")
        self.session = session
        self.ir = session.ir
        given = stepper_inputs(session, inputs)  # by stream, name or PyStepIO; zeros where none were given
        self.inputs, self.zeros_for = given.inputs, given.zeros_for
        self.downcast_inputs = downcast_inputs
        self.selection = selection if selection is not None else Selection()
        if self.selection.graph is None:
            self.selection.graph = self.ir.main_graph
        self._stepper = stepper
        self._gradient_sources: Optional[dict[Tensor, Tensor]] = None
        self.stop = stepper.stop if stepper is not None else None
        self.error: Optional[Exception] = None
        self.message = ""
        self._views = None if views is None else list(views)
        self._owns_views = views is None
        self._view_options = dict(live=live, window=window, scheduler=scheduler)
        self._widget = None
        self.filter_text = ""
        self._handle = subscribe_weakly(session.events, self._heard)

    # ----- the stepper -----
    @property
    def stepper(self):
        """The session's stepper this view drives, made with ``inputs`` on first use."""
        if self._stepper is None:
            self._stepper = self.session.stepper(self.inputs, self.downcast_inputs)
        return self._stepper

    @property
    def status(self) -> str:
        return "not started" if self.stop is None else self.stop.status

    @property
    def gradient_sources(self) -> dict[Tensor, Tensor]:
        """What each gradient of the session's Ir is the gradient of, found once: that Ir no longer changes."""
        if self._gradient_sources is None:
            self._gradient_sources = gradient_sources(self.ir)
        return self._gradient_sources

    @property
    def rows(self) -> list[LiveRow]:
        return live_rows(self.stop, self.gradient_sources)

    # ----- commands (what the buttons call) -----
    def step(self):
        """Run the next op, entering called graphs. Returns the new stop (None when it failed)."""
        return self._command(lambda stepper: stepper.step())

    def step_over(self):
        return self._command(lambda stepper: stepper.step_over())

    def step_out(self):
        return self._command(lambda stepper: stepper.step_out())

    def continue_(self):
        return self._command(lambda stepper: stepper.continue_())

    def run_to(self, target: Union[str, Op, None] = None):
        """Run to an op given as an Op, an op name or an op type (a name wins); by default the
        selected op."""
        if target is None or target == "":
            target = self.selection.op
        if target is None:
            return self._failed(ValueError("run to what? Type an op name or type, or select an op"))
        if isinstance(target, Op):
            return self._command(lambda stepper: stepper.run_to(op=target))
        ops = [op for graph in self.ir.graphs for op in graph._ops]
        if not any(op.name == target for op in ops) and any(op.type == target for op in ops):
            return self._command(lambda stepper: stepper.run_to(op_type=target))
        return self._command(lambda stepper: stepper.run_to(op=target))

    def reset(self):
        return self._command(lambda stepper: stepper.reset())

    def toggle_breakpoint(self, op: Optional[Op] = None):
        """Set a breakpoint at ``op`` (by default the selected op), or remove the one there."""
        op = op if op is not None else self.selection.op
        if op is None:
            return self._failed(ValueError("select an op (in the graph or schedule view) to break at"))

        def toggle(stepper):
            existing = [b for b in stepper.breakpoints if b.op == op.name and b.graph is op.graph and b.op_type is None]
            if existing:
                stepper.remove_breakpoint(existing[0])
            else:
                stepper.add_breakpoint(op=op)
            return stepper.stop
        return self._command(toggle)

    def _command(self, command: Callable[[Any], Any]):
        try:
            stop = command(self.stepper)
        except Exception as error:  # shown in the view: a button callback must not swallow it
            return self._failed(error)
        self.error, self.message = None, ""
        self._show(stop)
        return stop

    def _failed(self, error: Exception) -> None:
        self.error, self.message = error, f"{type(error).__name__}: {error}"
        self._render()
        return None

    # ----- following the run -----
    def _heard(self, kind: str, payload: Any) -> None:
        if kind == "step" and self._stepper is not None and payload is self._stepper.stop:
            self._show(payload)

    def _show(self, stop: Any) -> None:
        self.stop = stop
        if self._stepper is not None:
            self.selection.breakpoints = tuple(self._stepper.breakpoints)
        if stop is not None and stop.position is not None:
            self.selection.step = stop.position.flat_index
            self.selection.op = stop.op
        elif stop is not None and stop.status == "finished":
            self.selection.op, self.selection.step = None, None
        self._render()

    # ----- display -----
    def status_html(self) -> str:
        breakpoints = ", ".join(map(str, self._stepper.breakpoints)) if self._stepper is not None else ""
        parts = [f"<p><b>{text(self.status)}</b>: {text(describe_stop(self.stop))}</p>"]
        if self.zeros_for:
            streams = ", ".join(repr(name) for name in self.zeros_for)
            parts.append(f"<p>no inputs were given: it steps with zeros for {text(streams)} "
                         "(<code>workbench.show(session, inputs)</code> takes your data)</p>")
        if breakpoints:
            parts.append(f"<p>breakpoints: {text(breakpoints)}</p>")
        return "".join(parts)

    def error_html(self) -> str:
        return f"<div style='{ERROR_STYLE}'>{text(self.message)}</div>" if self.message else ""

    def values_html(self) -> str:
        if self.stop is not None and self.stop.status == "finished":
            return outputs_html(self._stepper.outputs if self._stepper is not None else {})
        op = self.stop.op if self.stop is not None else None
        made = [gradient_title(t, self.gradient_sources) for t in op.outputs] if op is not None else []
        return table_html(self.rows, self.ir.replication_factor, self.filter_text, made,
                          op.graph.label if op is not None else "")

    def filter(self, wanted: str) -> None:
        """Show the other live tensors whose name or graph contains ``wanted`` with their values."""
        self.filter_text = wanted
        self._render()

    def to_html(self) -> str:
        """Where the run stands, the last error and the live values, as HTML (names escaped)."""
        return self.status_html() + self.error_html() + self.values_html()

    @property
    def views(self) -> list:
        if self._views is None:
            from .graph_view import GraphView
            from .schedule_view import ScheduleView

            self._views = [GraphView(self.session, selection=self.selection, **self._view_options),
                           ScheduleView(self.session, selection=self.selection, **self._view_options)]
        return self._views

    @property
    def widget(self):
        """Buttons, a run-to box, the breakpoint toggle, the status, errors, the live values, then
        ``views`` (made on first use)."""
        if self._widget is None:
            import ipywidgets

            actions = dict(zip(COMMANDS, (self.step, self.step_over, self.step_out, self.continue_,
                                          lambda: self.run_to(self.target.value), self.reset)))
            self.buttons = {name: ipywidgets.Button(description=name, layout=ipywidgets.Layout(width="96px"))
                            for name in COMMANDS}
            self.buttons["breakpoint"] = ipywidgets.Button(description="toggle breakpoint at selected op",
                                                           layout=ipywidgets.Layout(width="auto"))
            actions["breakpoint"] = self.toggle_breakpoint
            for name, button in self.buttons.items():
                button.on_click(lambda _, action=actions[name]: action())
            self.target = ipywidgets.Text(placeholder="op name or type (empty: the selected op)",
                                          layout=ipywidgets.Layout(width="300px", max_width="100%"))
            self.status_box = ipywidgets.HTML()
            self.error_box = ipywidgets.HTML()
            self.table = ipywidgets.HTML()
            self.filter_box = ipywidgets.Text(placeholder="filter the other live tensors by name or graph",
                                              continuous_update=False,
                                              layout=ipywidgets.Layout(width="320px", max_width="100%"))
            self.filter_box.observe(lambda change: self.filter(change["new"]), names="value")
            controls = ipywidgets.HBox([self.buttons[name] for name in COMMANDS if name != "run to"],
                                       layout=ipywidgets.Layout(flex_flow="row wrap"))  # wrap in a narrow output
            run_to = ipywidgets.HBox([self.buttons["run to"], self.target, self.buttons["breakpoint"]],
                                     layout=ipywidgets.Layout(flex_flow="row wrap"))
            views = [view.widget for view in self.views]
            values = ipywidgets.VBox([self.filter_box, self.table],
                                     layout=ipywidgets.Layout(flex=f"1 1 {VALUES_WIDTH}px", min_width="260px",
                                                              overflow="auto", max_height="640px"))
            picture = [ipywidgets.Box([views[0]], layout=ipywidgets.Layout(flex="0 0 auto", max_width="100%",
                                                                           overflow="auto"))] if views else []
            # the picture beside the table where the output has room for both, under it where not: a
            # 630-px output (JupyterLab's in a narrow window) shows each whole, one above the other
            beside = ipywidgets.HBox([values, *picture], layout=ipywidgets.Layout(flex_flow="row wrap",
                                                                                  align_items="flex-start"))
            self._widget = ipywidgets.VBox([controls, run_to, self.status_box, self.error_box, beside, *views[1:]])
            self._render()
        return self._widget

    def _render(self) -> None:
        if self._widget is None:
            return
        self.status_box.value = self.status_html()
        self.error_box.value = self.error_html()
        self.table.value = self.values_html()
        status = self.status
        for name, button in self.buttons.items():
            button.disabled = name != "reset" and status in ("finished", "failed", "abandoned")

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        return display_bundle(self, include, exclude)

    def static_bundle(self) -> tuple[dict, dict]:
        """The picture that stays when there is no widget: the extension's view of the Session."""
        return source_bundle(self.session)

    def close(self) -> None:
        """Stop following the session (and close the views this view made)."""
        self.session.events.unsubscribe(self._handle)
        if self._owns_views:
            for view in self._views or ():
                view.close()

    def __repr__(self) -> str:
        return f"SessionStepperView({self.status}: {describe_stop(self.stop)})"
