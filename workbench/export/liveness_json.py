"""The optional ``liveness`` section of the JSON export: live tile memory per IPU at each step of the
flattened schedule, as plain data for charts (see SCHEMA.md)."""
from __future__ import annotations

from typing import Optional

from workbench.analysis.tensor_liveness import TensorLiveness, tensor_liveness
from workbench.ir import Ir

liveness_section_version = 1


def liveness_json(ir: Ir, liveness: Optional[TensorLiveness] = None) -> dict:
    """The ``liveness`` section for ``ir``; ``liveness`` reuses an already computed analysis.

    A program that cannot be flattened (a call cycle, contradictory ordering) gives no steps and an
    ``error`` saying why, so the rest of the document can still be shown."""
    if liveness is None:
        try:
            liveness = tensor_liveness(ir)
        except ValueError as error:
            return {"version": liveness_section_version, "error": str(error), "steps": [], "ipus": []}
    steps = [{"op": step.op.id, "graph": step.graph.id, "depth": step.depth} for step in liveness.flat]
    return {"version": liveness_section_version, "error": None, "steps": steps,
            "ipus": [_ipu(liveness, ipu) for ipu in liveness.ipus]}


def _ipu(liveness: TensorLiveness, ipu: int) -> dict:
    records = liveness.steps[ipu]
    static = {kind: sum(a.nbytes for a in liveness.always_live(ipu) if a.kind == kind)
              for kind in ("variable", "constant")}
    totals = [record.total for record in records]
    peak = max(range(len(totals)), key=totals.__getitem__) if totals else None
    return {"ipu": ipu, "variables": static["variable"], "constants": static["constant"],
            "intermediates": [record.intermediates for record in records],
            "code": [record.code for record in records],
            "peak_step": peak, "peak_bytes": totals[peak] if peak is not None else sum(static.values())}
