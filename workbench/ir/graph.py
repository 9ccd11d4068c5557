"""Graphs: ordered ops and the tensors they connect; the main graph or a callable subgraph."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from . import display
from .context import get_current_context
from .names import Namespace
from .op import Op
from .tensor import Constant, Tensor, TensorSpec, Variable

if TYPE_CHECKING:
    from .ir import Ir


class Graph:
    """A graph of ops. Enter it (``with graph:``) to add ops to it.

    Graphs are made by the Ir (``ir.main_graph``, ``ir.create_graph``, ``ir.create_empty_graph``).
    """

    _ir: "Ir"
    _name: str
    _ops: list[Op]
    _tensors: Namespace
    _inputs: list[Tensor]
    _input_set: set[Tensor]
    _outputs: list[Tensor]
    _by_ref_inputs: set[Tensor]
    _hooks: dict[int, Callable[[Op], Any]]
    _next_hook: int
    _recursive_autodiff: bool

    def __init__(self):
        raise RuntimeError("Graphs cannot be constructed directly; use ir.main_graph, ir.create_graph "
                           "or ir.create_empty_graph")

    @classmethod
    def _create(cls, ir: "Ir", name: str) -> "Graph":
        graph = object.__new__(cls)
        graph._ir = ir
        graph._name = name
        graph._ops = []
        graph._tensors = Namespace()
        graph._inputs = []
        graph._input_set = set()
        graph._outputs = []
        graph._by_ref_inputs = set()
        graph._hooks = {}
        graph._next_hook = 0
        # False: autodiff of a caller must be given this graph's gradient (popart._internal.ir's
        # setCanBeRecursivelyAutodiffed), as for graphs with a hand-written gradient.
        graph._recursive_autodiff = True
        return graph

    # ----- identity -----
    @property
    def ir(self) -> "Ir":
        return self._ir

    @property
    def name(self) -> str:
        return self._name

    @property
    def id(self) -> str:
        return self._name or "main_graph"

    @property
    def label(self) -> str:
        """A display name: 'main' for the main graph."""
        return self._name or "main"

    @property
    def main_graph(self) -> "Graph":
        return self._ir.main_graph

    @property
    def is_main(self) -> bool:
        return self is self._ir.main_graph

    def __repr__(self) -> str:
        return f"Graph[{self.label} ir={self._ir.id} ops={len(self._ops)}]"

    def _repr_mimebundle_(self, include=None, exclude=None) -> tuple[dict, dict]:
        """Notebook display: the Ir's JSON opened on this graph, and plain text."""
        return display.present("graph_bundle", self)

    @property
    def _ipython_display_(self) -> Optional[Callable[[], None]]:
        """In a kernel, a graph of a big Ir shows its first picture at once and the rest next (None:
        IPython shows ``_repr_mimebundle_``); see ``workbench.export.first_picture``."""
        return display.present("ipython_display", self)

    def __str__(self) -> str:
        """The graph as text, one op a line."""
        head = f"graph {self.label}({', '.join(f'%{t.name}: {t.spec}' for t in self._inputs)})"
        body = [f"  {op}" for op in self._ops]
        tail = f"  return ({', '.join('%' + t.name for t in self._outputs)})"
        return "\n".join([head, *body, tail])

    # ----- contents -----
    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(self._inputs)

    @property
    def inputs_by_name(self) -> dict[str, Tensor]:
        return {t.name: t for t in self._inputs}

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        return tuple(self._outputs)

    @property
    def ops(self) -> tuple[Op, ...]:
        """Ops in creation order."""
        return tuple(self._ops)

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor of the graph, as popxl lists them: the main graph's include one handle per host
        stream (see ``device_tensors`` for the tensors that hold values)."""
        if self.is_main:
            return tuple(self._tensors.values()) + self._ir._stream_tensors()
        return tuple(self._tensors.values())

    @property
    def device_tensors(self) -> tuple[Tensor, ...]:
        """The tensors that hold values on the device: ``tensors`` less the host-stream handles."""
        return tuple(self._tensors.values())

    @property
    def variables(self) -> tuple[Variable, ...]:
        return tuple(t for t in self._tensors.values() if isinstance(t, Variable))

    @property
    def constants(self) -> tuple[Constant, ...]:
        return tuple(t for t in self._tensors.values() if isinstance(t, Constant))

    @property
    def called_graphs(self) -> tuple["Graph", ...]:
        return tuple(dict.fromkeys(g for op in self._ops for g in op.called_graphs))

    def is_input(self, tensor: Tensor) -> bool:
        """Whether ``tensor`` is one of this graph's inputs (no copy of ``inputs`` made)."""
        return tensor in self._input_set

    def is_by_ref_input(self, tensor: Tensor) -> bool:
        """Whether ``tensor`` is an input passed by reference (``TensorByRef``): callers see its writes."""
        return tensor in self._by_ref_inputs

    def is_output(self, tensor: Tensor) -> bool:
        """Whether ``tensor`` is one of this graph's outputs."""
        return tensor in self._outputs

    def get_tensor(self, tensor_id: str) -> Tensor:
        for tensor in self.tensors:
            if tensor.id == tensor_id or (not self._name and tensor.name == tensor_id):
                return tensor
        raise KeyError(f"graph {self.label!r} has no tensor with id {tensor_id!r}")

    def __contains__(self, tensor: object) -> bool:
        return isinstance(tensor, Tensor) and tensor.graph is self

    def __call__(self) -> "Graph":
        """The graph itself: popart.ir, popxl's earlier name, read the main graph with a call
        (``ir.main_graph()``), which scripts written for it still do."""
        return self

    # ----- context -----
    def __enter__(self) -> "Graph":
        graphs = get_current_context().graphs
        if graphs and graphs[0].ir is not self._ir:
            raise RuntimeError(f"cannot enter {self!r} inside a graph of another Ir "
                               f"({graphs[0].ir!r}); leave that Ir's graphs first")
        graphs.append(self)
        return self

    def __exit__(self, *exc) -> None:
        graphs = get_current_context().graphs
        if not graphs or graphs[-1] is not self:
            raise RuntimeError(f"graph contexts closed out of order while leaving {self!r}")
        graphs.pop()

    def register_op_created_hook(self, fn: Callable[[Op], Any]) -> int:
        """Call ``fn(op)`` after each op created in this graph; returns a handle for removal."""
        self._next_hook += 1
        self._hooks[self._next_hook] = fn
        return self._next_hook

    def remove_op_created_hook(self, handle: int) -> None:
        if handle not in self._hooks:
            raise ValueError(f"no op-created hook with handle {handle} on {self!r}")
        del self._hooks[handle]

    # ----- building (used by the ops and tensor factories) -----
    def _check_buildable(self) -> None:
        self._ir._check_buildable()

    def _context_ipu(self) -> int:
        return get_current_context().ipu_id

    def _unique_name(self, name: str) -> str:
        if not isinstance(name, str):
            raise TypeError(f"a tensor's name must be a str (or None for a default name), not "
                            f"{type(name).__name__} {name!r}")
        return self._tensors.fresh(get_current_context().name_scope_prefix() + name)

    def _unique_op_name(self, op_type: str, prefix: Optional[str] = None) -> str:
        """``<name scope>/<op_type>.<n>``, ``n`` counting every op of the Ir."""
        self._ir._op_counter += 1
        prefix = get_current_context().name_scope_prefix() if prefix is None else prefix
        return f"{prefix}{op_type}.{self._ir._op_counter}"

    def _add_tensor(self, tensor: Tensor) -> None:
        self._tensors[tensor.name] = tensor
        self._ir.events.emit("tensor_added", tensor)

    def _add_input(self, spec: TensorSpec, name: Optional[str], by_ref: bool) -> Tensor:
        self._check_buildable()
        if self.is_main:
            raise ValueError("the main graph has no inputs: use popxl.graph_input inside a subgraph "
                             "(ir.create_graph) or feed data with popxl.h2d_stream and ops.host_load")
        return self._register_input(Tensor._create(self, self._unique_name(name or "input"), spec,
                                                   self._context_ipu()), by_ref)

    def _register_input(self, tensor: Tensor, by_ref: bool) -> Tensor:
        """Make the new ``tensor`` this graph's last input (one callers see written if ``by_ref``)."""
        self._add_tensor(tensor)
        self._inputs.append(tensor)
        self._input_set.add(tensor)
        if by_ref:
            self._by_ref_inputs.add(tensor)
        return tensor

    def _add_output(self, tensor: Tensor) -> None:
        self._check_buildable()
        if not isinstance(tensor, Tensor):
            raise TypeError(f"graph outputs must be Tensors, got {type(tensor).__name__}")
        if tensor.graph is not self:
            raise ValueError(f"tensor {tensor.id!r} belongs to graph {tensor.graph.label!r}, not to "
                             f"{self.label!r}: only tensors of a graph can be its outputs")
        self._outputs.append(tensor)

    # ----- editing (used by the IR-to-IR passes, which log each edit to undo it) -----
    def _fresh_name(self, name: str) -> str:
        """``name``, or ``name_1``, ``name_2``... whichever is still free in this graph."""
        return self._tensors.fresh(name)

    def _rename_tensor(self, tensor: Tensor, name: str) -> None:
        del self._tensors[tensor.name]
        tensor._name = self._fresh_name(name)
        self._tensors[tensor.name] = tensor

    def _forget_tensor(self, tensor: Tensor) -> None:
        """Drop ``tensor`` (an input too) from the graph; nothing may read it."""
        if tensor in self._input_set:
            self._inputs.remove(tensor)
            self._input_set.discard(tensor)
        del self._tensors[tensor.name]

    def _remove_op(self, op: Op) -> None:
        """Take out ``op``, whose outputs nobody reads."""
        self._ops.remove(op)
        for tensor in dict.fromkeys(op.inputs):
            tensor.consumers.remove(op)
        for tensor in op.outputs:
            del self._tensors[tensor.name]

    def _replace_ops(self, old: Sequence[Op], new: Op) -> None:
        """Put ``new`` (the op added last) where the last of ``old`` is and take ``old`` out: ``new`` makes
        their outputs now (a merge of ops), so those stay in the graph."""
        position = max(self._ops.index(op) for op in old)
        self._ops.remove(new)
        for op in old:
            self._ops.remove(op)
            for tensor in dict.fromkeys(op.inputs):
                tensor.consumers.remove(op)
        self._ops.insert(position - len(old) + 1, new)
        for op in self._ops:
            if any(a in old for a in op.after):
                op.after = tuple(dict.fromkeys(new if a in old else a for a in op.after))

    def _remove_last_output(self) -> None:
        self._outputs.pop()

    def remove_output(self, index: int) -> Tensor:
        """Stop returning output ``index`` (later outputs move down one place) and give back its tensor,
        which stays in the graph. The ops calling this graph are not changed: that is the caller's job."""
        self._check_buildable()
        if not 0 <= index < len(self._outputs):
            raise IndexError(f"graph {self.label!r} has no output at index {index}; it has "
                             f"{len(self._outputs)} outputs")
        return self._outputs.pop(index)

    def append_input(self, name: str, spec: TensorSpec, ipu: int = 0, tile_set: str = "compute",
                     by_ref: bool = False) -> Tensor:
        """A new last input of this graph, named ``name`` (or ``name_1``... if taken); ``by_ref``: callers
        see its writes (``TensorByRef``)."""
        self._check_buildable()
        if self.is_main:
            raise ValueError("the main graph has no inputs: append inputs to a subgraph")
        return self._register_input(Tensor._create(self, self._fresh_name(name), spec, ipu, tile_set), by_ref)

    def _check_inputs(self, op_type: str, inputs: Iterable[Tensor]) -> None:
        for tensor in inputs:
            if not isinstance(tensor, Tensor):
                raise TypeError(f"{op_type}: inputs must be Tensors, got {type(tensor).__name__} "
                                f"{tensor!r}")
            if tensor._graph is self:
                continue
            if tensor.ir is not self._ir:
                raise ValueError(f"{op_type}: tensor {tensor.id!r} belongs to another Ir ({tensor.ir!r}) "
                                 f"than graph {self.label!r} ({self._ir!r})")
            raise ValueError(
                f"{op_type}: tensor {tensor.id!r} belongs to graph {tensor.graph.label!r} but the "
                f"op is being added to graph {self.label!r}; pass it into the subgraph as an "
                "input (a create_graph argument or popxl.graph_input) instead")

    def _add_op(self, op_type: str, inputs: Sequence[Tensor], output_specs: Sequence[TensorSpec], *,
                attrs: Optional[dict] = None, called_graphs: Sequence["Graph"] = (),
                modified: Sequence[int] = (), aliases: Optional[dict[int, int]] = None,
                output_names: Optional[Sequence[Optional[str]]] = None,
                ipu: Optional[int] = None, output_ipus: Optional[Sequence[int]] = None,
                crosses_ipus: bool = False) -> Op:
        """Append an op; its outputs are new tensors of ``output_specs``, on the IPU the op runs on or
        on ``output_ipus``. Unless the op ``crosses_ipus`` (a copy or a collective), its inputs must
        live on the IPU it runs on. Ops are added through ``workbench.ops.registry.create_op``."""
        if self._ir._owner is not None:
            self._ir._check_buildable()
        self._check_inputs(op_type, inputs)
        if output_ipus is not None and len(output_ipus) != len(output_specs):
            raise ValueError(f"{op_type}: {len(output_specs)} outputs but {len(output_ipus)} output IPUs")
        context = get_current_context()
        op_ipu = context.ipu_id if ipu is None else ipu
        if not crosses_ipus:
            for tensor in inputs:
                if tensor._ipu != op_ipu:
                    raise ValueError(
                        f"{op_type}: tensor {tensor.id!r} lives on IPU {tensor.ipu} but the op runs on IPU "
                        f"{op_ipu}; copy it there first with ops.ipu_copy(t, {op_ipu}) or "
                        f"t.copy_to_ipu({op_ipu}), or create it inside `with popxl.ipu({op_ipu}):`")
        tile_set = "io" if context.io_tile_set else "compute"
        prefix = context.name_scope_prefix()
        op = Op(op_type, self._unique_op_name(op_type, prefix), self, tuple(inputs), (),
                dict(attrs) if attrs else {}, tuple(called_graphs), op_ipu, tile_set, tuple(modified),
                dict(aliases) if aliases else {})
        names = output_names or ()
        outputs = []
        tensors = self._tensors
        for index, spec in enumerate(output_specs):
            given = names[index] if index < len(names) else None
            name = prefix + (given or op_type)
            place = op_ipu if output_ipus is None else output_ipus[index]
            tensor = Tensor._create(self, tensors.fresh(name), spec, place, tile_set, op)
            outputs.append(tensor)
            tensors[tensor._name] = tensor  # before the next output picks its unique name
        op.outputs = tuple(outputs)
        for tensor in inputs:
            consumers = tensor.consumers
            if not consumers or consumers[-1] is not op:  # a tensor read twice lists the op once
                consumers.append(op)
        self._ops.append(op)
        if context.sequence_mode is not None or context._hooks:
            context._op_created(op)
        if self._hooks:
            for hook in list(self._hooks.values()):
                hook(op)
        self._ir.events.emit("op_added", op)
        return op
