"""LivenessView: memory per IPU over the flattened schedule, and code liveness per graph."""
from __future__ import annotations

from typing import Any, Optional

from workbench.analysis.memory import memory, streaming_transfers
from workbench.analysis.tensor_liveness import tensor_liveness
from workbench.ir.device import Device, device_for

from .figures import liveness_figure
from .view import View


class LivenessView(View):
    """Bytes of tile memory live at each step of ``analysis.flattened_schedule``, per IPU, stacked by
    variables, constants, intermediates and code, against the device's capacity; hovering a step lists
    its live tensors; each IPU's title gives its Streaming Memory, and markers show where remote loads
    bring tensors in and remote stores write them back (a gradient named by its variable), and a star the
    peak. Over 800 steps, each point is the step of most memory of its span. ``include_code`` (or the
    checkbox) stacks code with them (True) or leaves it out (False); by default it is left out where it
    would dwarf the tensors, and the title says so. Below, the code liveness (``analysis.code_liveness``)
    of the graphs whose code is loaded, as bars from ``remote_code_load`` to last call; when all code is
    always live, one line says so. Clicking a step selects its op. The device is ``device``, the
    Session's device, or the simulated 'ipu_model'. While a Session is stepped (``session.stepper``),
    a line marks the step it stands before.
    """

    live_kinds = frozenset({"op_added", "op_changed", "tensor_added", "graph_built", "graph_discarded",
                            "attached", "run_finished", "step"})

    def __init__(self, source: Any, device: Optional[Device] = None, include_code: Optional[bool] = None,
                 **options):
        self._device = device
        self.include_code = include_code
        super().__init__(source, **options)
        self.selection.observe(lambda change: self.redraw(), names=["op", "step"])

    @property
    def device(self) -> Device:
        if self._device is not None:
            return self._device
        return self.session.device if self.session is not None else device_for("ipu_model")

    def _compute(self) -> None:
        if self.session is not None and self._device is None:
            self.report = self.session.memory_report
        else:
            self.report = memory(self.ir, self.device, tensor_liveness(self.ir))
        self.liveness = self.report.liveness
        stop = self._binding.last.get("step") if self._binding is not None else None
        position = getattr(stop, "position", None)
        self.stepper_step = position.flat_index if position is not None else None

    def build_figure(self):
        capacity = {record.ipu: record.tile_capacity for record in self.report.ipus}
        streaming = {record.ipu: record.streaming_bytes for record in self.report.ipus}
        return liveness_figure(self.liveness, capacity, self.marked_steps(), self.stepper_step, self.include_code,
                               streaming, streaming_transfers(self.liveness.flat), self.ir.replication_factor)

    def _controls(self) -> list:
        import ipywidgets

        shown = self.include_code if self.include_code is not None else not self._code_dwarfs()
        toggle = ipywidgets.Checkbox(value=shown, description="code in the memory panels", indent=False)
        toggle.observe(lambda change: self.show_code(change["new"]), names="value")
        return [toggle]

    def show_code(self, include: bool) -> None:
        """Stack code memory with the tensors (True) or leave it out, so the tensors fill the scale."""
        self.include_code = include
        self.redraw()

    def _code_dwarfs(self) -> bool:
        from .figures.liveness_figure import code_dwarfs_tensors

        return self.error is None and code_dwarfs_tensors(self.liveness)

    def marked_steps(self) -> list[int]:
        """The steps of the selected op (every expansion of its graph), else the selected step."""
        op = self.selection.op
        if op is not None:
            return [step.index for step in self.liveness.flat.steps if step.op is op]
        return [self.selection.step] if self.selection.step is not None else []

    def _click(self, key: Any) -> None:
        if isinstance(key, int) and 0 <= key < len(self.liveness.flat):
            self.selection.step = key
            self.selection.op = self.liveness.flat.steps[key].op

    def __repr__(self) -> str:
        steps = len(self.liveness.flat) if self.error is None else "?"
        return f"LivenessView({self.ir!r}: {steps} steps)"
