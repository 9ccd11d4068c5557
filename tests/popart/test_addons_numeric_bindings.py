"""popxl-addons' distributed layer norm, sharded cross entropy and scaled sum of squares: their C++ bindings
import as emulations whose ``createOpInGraph`` (called as popxl-addons calls it) adds the workbench's op."""
import importlib
import sys

import numpy as np
import pytest

import popxl
import popxl.ops as ops

BINDINGS = ("layer_norm_distributed_binding", "crossentropysharded_binding", "grad_reduce_square_add_binding")


@pytest.fixture
def bindings(tmp_path, monkeypatch):
    """The binding modules of a package named as popxl-addons is, holding only their C++ sources."""
    saved = {name: module for name, module in sys.modules.items() if name.startswith("popxl_addons")}
    for name in saved:
        del sys.modules[name]
    folder = tmp_path / "popxl_addons" / "ops"
    folder.mkdir(parents=True)
    (tmp_path / "popxl_addons" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    for name in BINDINGS:
        (folder / f"{name}.cpp").write_text("// cppimport\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield {name: importlib.import_module(f"popxl_addons.ops.{name}") for name in BINDINGS}
    for name in [m for m in sys.modules if m.startswith("popxl_addons")]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_the_bindings_add_the_workbench_ops_and_compute(bindings):
    ir = popxl.Ir(replication=2)
    graph = ir.main_graph
    with graph:
        x = popxl.variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="x")
        w, b = popxl.variable(np.ones(3, np.float32), name="w"), popxl.variable(np.zeros(3, np.float32), name="b")
        labels = popxl.variable(np.array([0, 4], np.int32), name="labels")
        scale = popxl.constant(0.5, popxl.float32)
        group = ir.replica_grouping()._pb_replica_grouping
        pb = graph._pb_graph
        norm = bindings["layer_norm_distributed_binding"].LayerNormDistributedOp.createOpInGraph(
            pb, {0: x.id, 1: w.id, 2: b.id}, {0: "y", 1: "mean", 2: "inv_std"}, 1e-5, group, None)
        loss = bindings["crossentropysharded_binding"].CrossEntropyShardedOp.createOpInGraph(
            pb, {0: x.id, 1: labels.id}, {0: "loss", 1: "nls"}, group=group, availableMemoryProportion=0.4,
            settings=None)
        squares = bindings["grad_reduce_square_add_binding"].GradReduceSquareAddOp.createOpInGraph(
            pb, {0: x.id, 1: scale.id}, {0: "squares"}, None)
        outs = []
        for op in (norm, loss, squares):
            t = popxl.Tensor._from_pb_tensor(op.outTensor(0))
            outs.append(popxl.d2h_stream(t.shape, t.dtype, name=t.name + "_out"))
            ops.host_store(outs[-1], t)
    assert [op.opType() for op in (norm, loss, squares)] == [
        "LayerNormDistributed", "CrossEntropySharded", "GradReduceSquareAdd"]
    with popxl.Session(ir, "ipu_model") as session:
        y, nll, total = (session.run()[o][0] for o in outs)
    both = np.concatenate([np.arange(6.0).reshape(2, 3)] * 2, axis=1)  # each replica holds the same columns
    whitened = (both - both.mean(1, keepdims=True)) / np.sqrt(both.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, whitened[:, :3], rtol=1e-5, atol=1e-6)
    log_softmax = both - both.max(1, keepdims=True) - np.log(np.exp(both - both.max(1, keepdims=True)).sum(1,
                                                                                                     keepdims=True))
    # label 0 lies in both replicas' ranges (each counts it), label 4 in neither
    np.testing.assert_allclose(nll, [-2 * log_softmax[0, 0], 0.0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, 0.5 * np.sum(np.arange(6.0) ** 2), rtol=1e-6)
