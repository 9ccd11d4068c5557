"""Programs that use ``popart._internal.ir`` the way popxl-addons does: a module with a hand-written gradient
graph handed to autodiff by id, ops placed in the weights fragments, and C++ custom-op modules."""
import sys

import numpy as np
import pytest

import popart._internal.ir as _ir
import popxl
import popxl.ops as ops
from popxl.context import _execution_context
from popxl.transforms.autodiff import ExpectedConnectionType, GradGraphInfo


class ScaleWithOwnGradient:
    """A small module: ``y = x * w``, whose gradient graph is written by hand and described to autodiff
    through ``_ir.BwdGraphInfo``, as popxl-addons' ``Module.build_grad`` does."""

    def __init__(self, ir, spec):
        self.forward = ir.create_graph(lambda x, w: x * w, spec, spec)
        self.forward._pb_graph.setCanBeRecursivelyAutodiffed(False)
        self.backward = ir.create_graph(lambda dy, x, w: (dy * w, dy * x), spec, spec, spec)

    def grad_info(self, ir) -> GradGraphInfo:
        x, w = self.forward.inputs
        (y,) = self.forward.outputs
        fwd, grad = ExpectedConnectionType.Fwd, ExpectedConnectionType.FwdGrad
        info = _ir.BwdGraphInfo(self.backward._pb_graph.id,
                                [_ir.ExpectedConnection(y.id, grad), _ir.ExpectedConnection(x.id, fwd),
                                 _ir.ExpectedConnection(w.id, fwd)],
                                [_ir.ExpectedConnection(x.id, grad), _ir.ExpectedConnection(w.id, grad)])
        return GradGraphInfo._from_pb(ir._pb_ir, self.forward._pb_graph, info)


def test_a_hand_written_gradient_graph_given_by_id_is_used_by_autodiff():
    x_data, w_data = np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, -1.0, 2.0], np.float32)
    ir = popxl.Ir()
    spec = popxl.TensorSpec((3,), popxl.float32)
    with ir.main_graph:
        module = ScaleWithOwnGradient(ir, spec)
        info = module.grad_info(ir)
        assert info.graph is module.backward and [c._pb_ec.type for c in info.expected_inputs] == [
            ExpectedConnectionType.FwdGrad, ExpectedConnectionType.Fwd, ExpectedConnectionType.Fwd]

        def loss(x, w):  # z = (x * w)^2, calling the module's forward graph
            (y,) = ops.call(module.forward, x, w)
            return y * y

        outer = ir.create_graph(loss, spec, spec)
        outer_grad = popxl.transforms.autodiff(outer, called_graphs_grad_info={module.forward: info})
        called = [op.getCalledGraph() for op in outer_grad.graph._pb_graph.getOps() if isinstance(op, _ir.op.CallOp)]
        assert module.backward._pb_graph in called

        x = popxl.variable(x_data, name="x")
        w = popxl.variable(w_data, name="w")
        site = ops.call_with_info(outer, x, w)
        dx, dw = ops.call(outer_grad.graph, popxl.constant(np.ones(3, np.float32)),
                          inputs_dict=outer_grad.inputs_dict(site))
        streams = [popxl.d2h_stream((3,), popxl.float32, name) for name in ("dx", "dw")]
        for stream, value in zip(streams, (dx, dw)):
            ops.host_store(stream, value)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()
    np.testing.assert_allclose(result[streams[0]], 2 * x_data * w_data ** 2, rtol=1e-6)
    np.testing.assert_allclose(result[streams[1]], 2 * x_data ** 2 * w_data, rtol=1e-6)


def test_ops_made_in_a_weights_fragment_run_when_the_weights_move():
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32)
        counter = popxl.remote_variable(np.array([1.0, 2.0], np.float32), buffer, name="counter")
        with _execution_context(_ir.ExecutionContext.WeightsFromHostFragment):
            loaded = ops.remote_load(buffer, 0, "counter_on_chip")
        with _execution_context(_ir.ExecutionContext.WeightsToHostFragment):
            ops.remote_store(buffer, 0, loaded)
        ops.var_updates.accumulate_(loaded, popxl.constant(np.array([10.0, 10.0], np.float32)))
    assert [op.type for op in ir.main_graph.ops] == ["accumulate_"]
    contexts = [(op.type, _ir.op_view.execution_context(op))
                for fragment in ("weights_from_host", "weights_to_host") for op in ir.fragment_ops(fragment)]
    assert contexts == [("init", _ir.ExecutionContext.WeightsFromHostFragment),
                        ("remote_load", _ir.ExecutionContext.WeightsFromHostFragment),
                        ("remote_store", _ir.ExecutionContext.WeightsToHostFragment)]
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(counter), [21.0, 22.0])
    with pytest.raises(NotImplementedError, match="AccumulateOuterFragment"):
        with _execution_context(_ir.ExecutionContext.AccumulateOuterFragment):
            pass


CUSTOM_OPS = ("fancy_op_binding", "replicated_all_gather_strided_binding", "replicated_all_reduce_strided_binding")


def _write_addons_like_package(root):
    """A package named as popxl-addons is, holding C++ custom-op sources beside the module that imports them."""
    ops_folder = root / "popxl_addons" / "custom"
    ops_folder.mkdir(parents=True)
    (root / "popxl_addons" / "__init__.py").write_text("")
    (ops_folder / "__init__.py").write_text("")
    for name in CUSTOM_OPS:
        (ops_folder / f"{name}.cpp").write_text("// cppimport\n// C++ source\n")
    (ops_folder / "fancy.cpp").write_text("// C++ that the binding includes\n")  # fancy.py stays Python
    (ops_folder / "fancy.py").write_text("import cppimport.import_hook  # noqa: F401\n"
                                         "from . import fancy_op_binding\n")


@pytest.fixture
def custom_op_package(tmp_path, monkeypatch):
    """The binding modules of an addons-like package, imported in this process (without cppimport)."""
    saved = {name: module for name, module in sys.modules.items() if name.startswith("popxl_addons")}
    for name in saved:
        del sys.modules[name]
    _write_addons_like_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "popxl_addons.custom"
    for name in [m for m in sys.modules if m.startswith("popxl_addons")]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_a_cpp_custom_op_imports_and_says_why_it_cannot_run(custom_op_package):
    import importlib

    binding = importlib.import_module(f"{custom_op_package}.fancy_op_binding")
    with pytest.raises(NotImplementedError, match=r"FancyOp of the C\+\+ custom op fancy_op_binding.cpp .*Poplar SDK"):
        binding.FancyOp.createOpInGraph


def test_only_popxl_addons_binding_modules_are_answered(tmp_path, monkeypatch):
    import importlib

    (tmp_path / "other_package").mkdir()
    (tmp_path / "other_package" / "__init__.py").write_text("")
    (tmp_path / "other_package" / "native_binding.cpp").write_text("// cppimport\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="native_binding"):
        importlib.import_module("other_package.native_binding")
    sys.modules.pop("other_package", None)


def _run_isolated(tmp_path, script: str) -> str:
    """Run ``script`` in a fresh interpreter that sees only this checkout, ``tmp_path`` and the installed
    packages' folder (no ``.pth`` files run, so no editable install adds another checkout)."""
    import subprocess
    import sysconfig
    from pathlib import Path

    checkout = Path(__file__).resolve().parents[2]
    paths = [str(checkout), str(tmp_path), sysconfig.get_paths()["purelib"]]
    prelude = f"import sys; sys.path[:0] = {paths!r}\n"
    done = subprocess.run([sys.executable, "-S", "-c", prelude + script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_cppimport_popxl_addons_alone_gets_a_stand_in(tmp_path):
    _write_addons_like_package(tmp_path)
    out = _run_isolated(tmp_path, """
import popxl
try:
    import cppimport
except ModuleNotFoundError:
    print("cppimport hidden from others")
import popxl_addons.custom.fancy as fancy
try:
    fancy.fancy_op_binding.FancyOp
except NotImplementedError as error:
    print("refused:", "Poplar SDK" in str(error))
print("stand-in:", "Stand-in" in sys.modules["cppimport"].__doc__)
""")
    assert out.split("\n")[:3] == ["cppimport hidden from others", "refused: True", "stand-in: True"]


REAL_CPPIMPORT = {
    "__init__.py": "def imp(fullname, opt_in=False):\n    raise ImportError(fullname)\n",
    "import_hook.py": """
import importlib.machinery, sys, types
from pathlib import Path

class Hook:
    # As cppimport's hook: first on sys.meta_path, it builds any module with a marked .cpp beside it.
    def find_spec(self, fullname, path, target=None):
        short = fullname.rsplit(".", 1)[-1]
        for folder in path or sys.path:
            source = Path(folder) / (short + ".cpp")
            if source.is_file() and b"cppimport" in source.read_bytes().split(b"\\n")[0]:
                if fullname.startswith("popxl_addons"):
                    raise RuntimeError("compiling " + fullname + " needs the Poplar SDK")
                return importlib.machinery.ModuleSpec(fullname, self, origin=str(source))
        return None
    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.built_by = "cppimport"
        return module
    def exec_module(self, module):
        pass

sys.meta_path.insert(0, Hook())
""",
}


@pytest.mark.parametrize("hook_first", [False, True])
def test_a_real_cppimport_is_used_as_it_is_and_still_builds_other_modules(tmp_path, hook_first):
    _write_addons_like_package(tmp_path)
    (tmp_path / "cppimport").mkdir()
    for name, text in REAL_CPPIMPORT.items():
        (tmp_path / "cppimport" / name).write_text(text)
    (tmp_path / "other_package").mkdir()
    (tmp_path / "other_package" / "__init__.py").write_text("")
    (tmp_path / "other_package" / "native_binding.cpp").write_text("// cppimport\n")
    first = "import cppimport.import_hook\nimport popxl\n" if hook_first else "import popxl\n"
    out = _run_isolated(tmp_path, first + f"""
import cppimport, popxl_addons.custom.fancy as fancy
print("real cppimport:", cppimport.__file__.startswith({str(tmp_path)!r}))
print("addons binding emulated:", type(fancy.fancy_op_binding).__name__ == "UnbuildableBinding")
import other_package.native_binding as native
print("others built by cppimport:", native.built_by)
""")
    assert out.split("\n")[:3] == ["real cppimport: True", "addons binding emulated: True",
                                    "others built by cppimport: cppimport"]


def test_the_replica_strided_gather_binding_is_a_gather_over_a_strided_grouping(custom_op_package):
    import importlib

    binding = importlib.import_module(f"{custom_op_package}.replicated_all_gather_strided_binding")
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        stream = popxl.h2d_stream((1, 2), popxl.float32, "x")
        x = ops.host_load(stream)
        graph = ir.main_graph
        op = binding.ReplicatedAllGatherStridedOp.createOpInGraph(
            graph._pb_graph, {0: x.id}, {0: graph._create_tensor_id("gathered")}, 2, 2, None)
        assert isinstance(op, _ir.op.collectives.ReplicatedAllGatherOp)
        gathered = popxl.Tensor._from_pb_tensor(op.outTensor(0))
        assert gathered.shape == (4,)  # the C++ op gathers flat
        out = popxl.d2h_stream(gathered.shape, gathered.dtype, "out")
        ops.host_store(out, gathered)
    data = np.arange(8, dtype=np.float32).reshape(4, 1, 2)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run({stream: data})[out]
    # Replicas 0 and 2 form one group, 1 and 3 the other: each gathers its group's rows in order.
    for replica in range(4):
        group = [replica % 2, replica % 2 + 2]
        np.testing.assert_array_equal(result[replica], data[group].reshape(-1))


def test_the_strided_all_reduce_variants_with_identical_values_are_all_reduces_marked_so(custom_op_package):
    import importlib

    binding = importlib.import_module(f"{custom_op_package}.replicated_all_reduce_strided_binding")
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        create = binding.ReplicatedAllReduceStridedOp.createOpInGraph
        marked = create(ir.main_graph._pb_graph, {0: x.id}, {0: "y"}, "add", 1, 2, False, True, None)
        plain = create(ir.main_graph._pb_graph, {0: x.id}, {0: "z"}, "add", 1, 2, False, False, None)
        with pytest.raises(NotImplementedError, match="ReplicatedAllReduceStridedInplaceOp with identical_inputs"):
            binding.ReplicatedAllReduceStridedInplaceOp.createOpInGraph(
                ir.main_graph._pb_graph, {0: x.id}, {0: "w"}, "add", 1, 2, True, False, None)
    assert [o.type for o in ir.main_graph.ops] == ["replicated_all_reduce_identical", "replicated_all_reduce"]
    assert ir.main_graph.ops[0].attrs["identical_grad_inputs"] and not ir.main_graph.ops[0].attrs["identical_inputs"]
    assert all(isinstance(op, _ir.op.collectives.ReplicatedAllReduceOp) for op in (marked, plain))
