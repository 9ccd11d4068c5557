"""``session._pb_session``: a popxl Session seen as PopART's session binding (weights in and out by id)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.ir.tensor import Variable

if TYPE_CHECKING:
    from workbench.runtime.session import Session as WorkbenchSession


class Session:
    """PopART's session methods over a workbench ``Session`` (``_session``)."""

    __slots__ = ("_session",)
    _session: WorkbenchSession

    def __init__(self, *args, **kwargs):
        raise TypeError("this Session cannot be constructed here: create a popxl.Session; its view is "
                        "session._pb_session")

    @classmethod
    def _view(cls, session) -> "Session":
        view = object.__new__(cls)
        view._session = session
        return view

    def _variables(self, weights_io: Any, what: str) -> dict[str, Variable]:
        by_id = {v.id: v for v in self._session.ir.main_graph.variables}
        ids = list(getattr(weights_io, "weights", {}))
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            raise KeyError(f"{what}: no variable of the session's Ir has id {unknown}; its variables are "
                           f"{sorted(by_id)}")
        return {i: by_id[i] for i in ids}

    def writeWeights(self, weights_io: Any) -> None:
        """Set the variables named in ``weights_io`` (a ``popart.PyWeightsIO``) to its arrays."""
        variables = self._variables(weights_io, "writeWeights")
        self._session.write_variables_data({variables[i]: weights_io.weights[i] for i in variables})

    def readWeights(self, weights_io: Any) -> None:
        """Fill the arrays of ``weights_io`` with the variables' values."""
        variables = self._variables(weights_io, "readWeights")
        data = self._session.get_tensors_data(list(variables.values()))
        for tensor_id, variable in variables.items():
            weights_io.weights[tensor_id][...] = data[variable]

    def weightsFromHost(self) -> None:
        self._session.weights_from_host()

    def weightsToHost(self) -> None:
        self._session.weights_to_host()

    def getIr(self):
        from .ir_view import view_ir
        return view_ir(self._session.ir)
