"""The PopART session options an Ir's view hands out: its replication options are the Ir's replication factor."""
from __future__ import annotations

import weakref
from typing import Any

from workbench.ir import Ir
from workbench.ir.popdist_settings import PopdistSettings
from workbench.popart.options import SessionOptions

_REPLICATION = ("enableReplicatedGraphs", "replicatedGraphCount")
_DISTRIBUTION = ("enableDistributedReplicatedGraphs", "globalReplicationFactor", "globalReplicaOffset")
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
    this instance's replicas. Setting the distributed options (as ``popdist.popart.configureSessionOptions`` does)
    makes the Ir such an instance: ``ir.replication_factor`` becomes the job's ``globalReplicationFactor`` and
    ``ir.instance_replication_factor`` the local count, as in popxl."""

    def __init__(self, ir: Ir):
        super().__init__()
        object.__setattr__(self, "_ir", weakref.ref(ir))
        object.__setattr__(self, "_set_job", False)  # whether these options made the Ir an instance of a job

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
        elif name in _DISTRIBUTION:
            self._follow_ir()
        super().__setattr__(name, value)
        if name in _DISTRIBUTION or (name in _REPLICATION and object.__getattribute__(self, "_set_job")):
            self._place_in_job()

    def _place_in_job(self) -> None:
        """Make the Ir the instance of the job the distributed options describe (once they describe one:
        the global factor a multiple of the local one, the offset where an instance's replicas start)."""
        ir = object.__getattribute__(self, "_ir")()
        set_by_us = object.__getattribute__(self, "_set_job")
        if ir is None or (ir._popdist is not None and not set_by_us):
            return  # an Ir made with popdist keeps popdist's settings
        values = self._values
        local = int(values["replicatedGraphCount"]) if values["enableReplicatedGraphs"] else 1
        if not values["enableDistributedReplicatedGraphs"]:
            if set_by_us:
                ir._set_job(None, local)
                object.__setattr__(self, "_set_job", False)
            return
        total, offset = int(values["globalReplicationFactor"]), int(values["globalReplicaOffset"])
        if total < local or total % local or offset % local or offset >= total:
            return
        ir._set_job(PopdistSettings(total // local, offset // local, total, local, offset, 1), local)
        object.__setattr__(self, "_set_job", True)

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
