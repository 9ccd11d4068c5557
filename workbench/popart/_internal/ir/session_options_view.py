"""The PopART session options an Ir's view hands out: its replication options are the Ir's replication factor."""
from __future__ import annotations

import weakref
from typing import Any

from workbench.ir import Ir
from workbench.popart.options import SessionOptions

_REPLICATION = ("enableReplicatedGraphs", "replicatedGraphCount")
# What the options of an Ir made with popdist say: this instance's place in the job.
_FROM_POPDIST = {"enableDistributedReplicatedGraphs": lambda s: True,
                 "globalReplicationFactor": lambda s: s.num_total_replicas,
                 "globalReplicaOffset": lambda s: s.replica_index_offset,
                 "enableReplicatedGraphs": lambda s: s.num_local_replicas > 1,
                 "replicatedGraphCount": lambda s: s.num_local_replicas}


class IrSessionOptions(SessionOptions):
    """``ir._pb_ir.getSessionOptions()``: setting ``enableReplicatedGraphs`` or ``replicatedGraphCount`` sets
    ``ir.replication_factor`` (the count while enabled, else 1), and reading them follows the Ir, as popxl's Ir
    keeps its replication factor in these options. The options of an Ir made with popdist read popdist's
    settings: the distributed options give the job and this instance's offset in it, the replication options
    this instance's replicas."""

    def __init__(self, ir: Ir):
        super().__init__()
        object.__setattr__(self, "_ir", weakref.ref(ir))

    def __getattr__(self, name: str) -> Any:
        ir = object.__getattribute__(self, "_ir")()
        if name in _FROM_POPDIST and ir is not None and ir._popdist is not None:
            return _FROM_POPDIST[name](ir._popdist)
        if name in _REPLICATION:
            self._follow_ir()
        return super().__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        ir = self._linked_ir()
        if name in _REPLICATION and ir is not None:
            self._follow_ir()
            planned = {**{key: self._values[key] for key in _REPLICATION}, name: value}
            ir.replication_factor = int(planned["replicatedGraphCount"]) if planned["enableReplicatedGraphs"] else 1
        super().__setattr__(name, value)

    def _linked_ir(self):
        ir = object.__getattribute__(self, "_ir")()
        return None if ir is None or ir._popdist is not None else ir

    def _follow_ir(self) -> None:
        """Take the Ir's factor where it was set on the Ir itself since the options last set it."""
        ir = self._linked_ir()
        values = self._values
        if ir is None:
            return
        stated = int(values["replicatedGraphCount"]) if values["enableReplicatedGraphs"] else 1
        if stated != ir.replication_factor:
            values["replicatedGraphCount"] = ir.replication_factor
            values["enableReplicatedGraphs"] = values["enableReplicatedGraphs"] or ir.replication_factor > 1
