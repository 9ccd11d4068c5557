"""The Ir: a main graph, subgraphs, variables, host streams and remote buffers."""
from __future__ import annotations

import itertools
import logging
import os
import weakref
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Sequence, Union, cast

import numpy as np


from . import display, dtypes
from .events import EventBus
from .fragments import FRAGMENTS, WEIGHTS_FROM_HOST
from .graph import Graph
from .host_data import variable_data
from .names import Namespace
from .popdist_settings import PopdistSettings
from .remote_buffer import RemoteBuffer
from .replica_grouping import ReplicaGrouping
from .streams import _S, DeviceToHostStream, HostToDeviceStream, Stream
from .tensor import Tensor, TensorSpec, Variable

_ids = itertools.count()
RETRIEVAL_MODES = ("one_per_group", "all_replicas")


class Ir:
    """A popxl program: a main graph and the subgraphs it calls.

    Build it inside ``with ir.main_graph:``; run it with ``popxl.Session(ir, "ipu_model")``.
    ``replication="popdist"`` makes it one instance of the job poprun launched; a ``PopdistSettings``
    makes it the instance those settings describe (as PopART's distributed options do).
    """

    # The Irs alive, by id (popxl's ``Ir._ir_cache``): an Ir leaves it when nothing else holds it.
    _ir_cache: "weakref.WeakValueDictionary[int, Ir]" = weakref.WeakValueDictionary()

    def __init__(self, replication: Union[int, Literal["popdist"], PopdistSettings] = 1):
        self._id = next(_ids)
        Ir._ir_cache[self._id] = self
        self.events = EventBus()
        self._owner: Any = None
        self._op_counter = 0
        self._graphs: list[Graph] = []
        self._graph_names: Namespace = Namespace(main_graph=None)  # the main graph's id
        self._streams: Namespace = Namespace()
        self._remote_buffers: list[RemoteBuffer] = []
        self._fragments: dict[str, list] = {fragment: [] for fragment in FRAGMENTS}
        self._num_host_transfers = 1
        self._dot_dir: Optional[Path] = None
        self._dot_checkpoints = 0
        self._dot_all = False  # dot_checkpoint enabled every check (an Ir without PopART options)
        # popdist's settings when this Ir is one instance of a job (replication="popdist"), else None.
        self._popdist = None
        if isinstance(replication, PopdistSettings):
            self._popdist = replication
            replication = replication.num_total_replicas
        elif replication == "popdist":
            from .popdist_settings import read_settings

            self._popdist = read_settings()
            replication = self._popdist.num_total_replicas if self._popdist is not None else 1
        self._replication_factor = 1
        self.replication_factor = replication
        self._main = Graph._create(self, "")
        self._graphs.append(self._main)

    # ----- identity -----
    @property
    def id(self) -> int:
        return self._id

    def __hash__(self) -> int:
        return hash(self._id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ir):
            raise TypeError(f"cannot compare an Ir with {type(other).__name__}")
        return self._id == other._id

    def __repr__(self) -> str:
        return f"Ir[id={self._id}]"

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        """Notebook display: the Ir's JSON for the JupyterLab extension, and plain text."""
        return display.present("ir_bundle", self)

    @property
    def _ipython_display_(self) -> Optional[Callable[[], None]]:
        """In a kernel, a big Ir shows its first picture at once and the rest next (None: IPython
        shows ``_repr_mimebundle_``); see ``workbench.export.first_picture``."""
        return display.present("ipython_display", self)

    # ----- graphs -----
    @property
    def main_graph(self) -> Graph:
        return self._main

    @property
    def graphs(self) -> tuple[Graph, ...]:
        """Every graph of the Ir, the main graph first, then subgraphs in creation order."""
        return tuple(self._graphs)

    def create_empty_graph(self, name: Optional[str] = None) -> Graph:
        """Create a subgraph with no inputs, outputs or ops."""
        self._check_buildable()
        graph = Graph._create(self, self._unique_graph_name(name or "graph"))
        self._graphs.append(graph)
        self.events.emit("graph_created", graph)
        return graph

    def create_graph(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Graph:
        """Create a subgraph by calling ``fn`` (a function or a ``popxl.Module``).

        Tensor and TensorSpec arguments, alone or in lists, ``*args`` and ``**kwargs``, become graph
        inputs of the same shape and dtype, in signature order followed by any ``popxl.graph_input``
        made inside ``fn``. What ``fn`` returns (None, a Tensor or Tensors) becomes the outputs.
        """
        from .create_graph import build_graph

        return build_graph(self, fn, args, kwargs)

    def _unique_graph_name(self, name: str) -> str:
        if "\0" in name:
            raise ValueError(f"graph name {name!r} contains a NUL character; expected a name without one")
        candidate = self._graph_names.fresh(name)
        self._graph_names[candidate] = None
        return candidate

    def _discard_graph(self, graph: Graph) -> None:
        """Forget a graph whose building failed (listeners that saw it created are told)."""
        self._graphs.remove(graph)
        self._graph_names.pop(graph.name, None)
        self.events.emit("graph_discarded", graph)

    # ----- settings -----
    @property
    def num_host_transfers(self) -> int:
        return self._num_host_transfers

    @num_host_transfers.setter
    def num_host_transfers(self, value: int) -> None:
        self._check_buildable()
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"num_host_transfers must be a positive int, got {value!r}")
        self._num_host_transfers = value

    @property
    def replication_factor(self) -> int:
        return self._replication_factor

    @replication_factor.setter
    def replication_factor(self, value: int) -> None:
        if self._owner is not None:
            raise RuntimeError("the replication factor cannot change once a Session owns the Ir")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"the replication factor must be a positive int, got {value!r}")
        if self._popdist is not None and value != self._popdist.num_total_replicas:
            raise ValueError(f"the replication factor of an Ir made with replication='popdist' is popdist's "
                             f"{self._popdist.num_total_replicas} replicas, got {value}")
        self._replication_factor = value

    def _set_job(self, settings: Optional[PopdistSettings], local: int) -> None:
        """Make this Ir one instance of the job ``settings`` describe, or (None) a job of its own with
        ``local`` replicas: what PopART's distributed replication options say when set on the Ir's options."""
        if self._owner is not None:
            raise RuntimeError("the replication factor cannot change once a Session owns the Ir")
        self._popdist = settings
        self._replication_factor = local if settings is None else settings.num_total_replicas

    @property
    def instance_replication_factor(self) -> int:
        """The replicas this instance (process) runs: all of them unless popdist splits the job."""
        if self._popdist is not None:
            return self._popdist.num_local_replicas
        return self._replication_factor

    @property
    def local_replicas(self) -> range:
        """The global indices of the replicas this instance runs."""
        if self._popdist is not None:
            return self._popdist.local_replicas
        return range(self._replication_factor)

    @property
    def instances(self) -> list[range]:
        """The global replica indices of each instance of the job, in instance order (one range, of
        every replica, unless popdist splits the job)."""
        if self._popdist is None:
            return [range(self._replication_factor)]
        local = self._popdist.num_local_replicas
        return [range(k * local, (k + 1) * local) for k in range(self._popdist.num_instances)]

    # ----- replica groupings -----
    def replica_grouping(self, stride: int = 1, group_size: Optional[int] = None) -> ReplicaGrouping:
        """Group replicas: each group takes ``group_size`` replicas ``stride`` apart."""
        return ReplicaGrouping._strided(self, stride, group_size)

    def replica_grouping_from_assignments(self, assignment: Sequence[int]) -> ReplicaGrouping:
        """Group replicas by an explicit group index per replica."""
        return ReplicaGrouping._from_assignment(self, assignment)

    # ----- streams and buffers -----
    def _add_stream(self, kind: type[_S], name: str, spec: TensorSpec) -> _S:
        self._check_buildable()
        unique = self._streams.fresh(name)
        stream = kind._create(self, unique, spec)
        self._streams[unique] = stream
        return stream

    def _stream_tensors(self) -> tuple[Tensor, ...]:
        """The main graph's handle tensor of every stream, in the order the streams were made."""
        return tuple(stream._stream_tensor for stream in self._streams.values())

    def _streams_used_by(self, op_type: str) -> list[Stream]:
        """The streams of the ``op_type`` ops, and of those merged into a MultiExchange (its descriptors)."""
        used = []
        for graph in self._graphs:
            for op in graph._ops:
                if op.type == op_type:
                    used.append(op.attrs["stream"])
                used += [d.attrs["stream"] for d in op.attrs.get("descriptors", ()) if d.type == op_type]
        return list(dict.fromkeys(used))

    def get_all_h2d_streams(self) -> set[HostToDeviceStream]:
        """The host-to-device streams that some host_load reads."""
        return cast(set[HostToDeviceStream], set(self._streams_used_by("host_load")))

    def get_all_d2h_streams(self) -> set[DeviceToHostStream]:
        """The device-to-host streams that some host_store writes."""
        return cast(set[DeviceToHostStream], set(self._streams_used_by("host_store")))

    def _register_remote_buffer(self, buffer: RemoteBuffer) -> int:
        self._check_buildable()
        self._remote_buffers.append(buffer)
        return len(self._remote_buffers)  # ids start at 1, as in popxl

    @property
    def remote_buffers(self) -> tuple[RemoteBuffer, ...]:
        return tuple(self._remote_buffers)

    # ----- variables -----
    @property
    def variables(self) -> tuple[Variable, ...]:
        return self._main.variables

    def fragment_ops(self, fragment: str) -> tuple:
        """The ops of the ``'weights_from_host'`` or ``'weights_to_host'`` fragment (``ir/fragments.py``)."""
        return tuple(self._fragments[fragment])

    @property
    def persistent_tensors(self) -> tuple[Tensor, ...]:
        """Main-graph tensors that, like variables, stay on chip between runs: the outputs of the
        weights-from-host fragment (the shards of replica-sharded variables)."""
        return tuple(t for op in self._fragments[WEIGHTS_FROM_HOST] for t in op.outputs)

    def _add_variable(self, graph: Graph, data: Any, dtype: Optional[dtypes.dtype], name: Optional[str],
                      downcast: bool, replica_grouping: Optional[ReplicaGrouping],
                      retrieval_mode: str, shard_count: int = 1) -> Variable:
        self._check_buildable()
        if not graph.is_main:
            raise ValueError(f"variables can only be created in the main graph, not in subgraph "
                             f"{graph.label!r}: create it in `with ir.main_graph:` and pass it to the "
                             "subgraph as an input")
        if retrieval_mode not in RETRIEVAL_MODES:
            raise ValueError(f"retrieval_mode must be one of {RETRIEVAL_MODES}, got {retrieval_mode!r}")
        grouping = replica_grouping or self.replica_grouping()
        if grouping._ir is not self:
            raise ValueError("the replica grouping belongs to another Ir")
        array = variable_data(data, dtype, downcast)
        if isinstance(array, np.memmap) and not grouping.is_const:
            logging.getLogger("popart").warning(
                f"Variable {name or 'variable'!r}: you have passed np.memmap data and a non-const replica grouping; "
                "the groups' values are gathered out of the array, so the variable holds a copy and is not "
                "treated as an np.memmap (the session will not read or write its file)")
            array = np.array(array)
        if array.dtype.kind == "c":
            raise TypeError(f"variable {name or 'variable'!r} has {array.dtype} data, but popxl tensors cannot "
                            "be complex (popxl's complex dtypes are names only, no op takes them); expected "
                            "bool, int or float data")
        device_shape = array.shape
        if grouping.num_groups > 1:
            if not array.shape or array.shape[0] != grouping.num_groups:
                raise ValueError(f"a variable grouped into {grouping.num_groups} groups needs data with a "
                                 f"leading dimension of {grouping.num_groups} (one value per group), "
                                 f"got shape {array.shape}")
            device_shape = array.shape[1:]
        spec = TensorSpec(device_shape, dtypes.dtype.as_dtype(array.dtype))
        from .context import get_current_context

        variable = Variable._create(graph, graph._unique_name(name or "t"), spec,
                                    get_current_context().ipu_id)
        variable._host_data = array
        variable.replica_grouping = grouping
        variable.retrieval_mode = retrieval_mode
        variable.remote_buffer = None
        variable.remote_offset = 0
        variable.shard_count = shard_count
        graph._add_tensor(variable)
        return variable

    # ----- ownership -----
    def _check_buildable(self) -> None:
        if self._owner is not None:
            raise RuntimeError(f"{self!r} is owned by a Session and can no longer be changed; build a new "
                               "Ir (or finish building before creating the Session)")

    # ----- diagnostics -----
    def dot_checkpoint(self, check: str, save_dir: Optional[Union[Path, str]] = None) -> None:
        """Write the Ir's graphs as a Graphviz DOT file named after ``check``, if that check is enabled.

        As in popxl, the checks enabled are those the Ir's session option ``dotChecks`` and the
        ``POPART_DOT_CHECKS`` variable name (in any case; ``ALL`` for every one, the ``Final`` check a
        Session makes included). Where neither names a check and the variable is unset, the first
        checkpoint enables them all. Files go to ``save_dir`` (which also becomes the option
        ``logDir``), else to ``logDir``, else to the directory of an earlier ``save_dir`` or the
        working directory."""
        options = getattr(self, "_popart_session_options", None)
        if save_dir is not None:
            self._dot_dir = Path(save_dir)
            if options is not None:
                options.logDir = str(save_dir)
        if "POPART_DOT_CHECKS" not in os.environ and not self._dot_checks():
            if options is not None:
                options.dotChecks = {"ALL"}
            else:
                self._dot_all = True
        self._write_dot_check(check)

    def _dot_checks(self) -> set[str]:
        """The checks this Ir's options enable (POPART_DOT_CHECKS aside)."""
        options = getattr(self, "_popart_session_options", None)
        return set(options.dotChecks if options is not None else ()) | ({"ALL"} if self._dot_all else set())

    def _write_dot_check(self, check: str) -> None:
        """Write the DOT file of ``check`` where the options say, if the check is enabled."""
        options = getattr(self, "_popart_session_options", None)
        log_dir = str(options.logDir) if options is not None and options.logDir else ""
        directory = Path(log_dir) if log_dir else (self._dot_dir or Path.cwd())
        display.present("write_dot_checkpoint", self, check, directory)
