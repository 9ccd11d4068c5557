"""``popart._internal.ir`` is a view of the one workbench Ir: it reads popxl's objects and its edits show
everywhere (graph contents, the JSON export, a session run)."""
import numpy as np
import pytest

import popart
import popart._internal.ir as _ir
import popxl
import popxl.ops as ops
from workbench.export.json_schema import to_json
from workbench.ops.registry import REGISTRY


def _types(graph):
    return [(op.opType(), type(op).__name__) for op in graph._pb_graph.getOps()]


def test_every_registered_op_names_a_popart_class_and_has_a_view_class():
    missing = sorted(t for t, d in REGISTRY.items() if not d.popart_class)
    assert missing == []
    for definition in REGISTRY.values():
        space, _, name = definition.popart_class.rpartition(".")
        module = _ir.op if not space else getattr(_ir.op, space)
        assert issubclass(getattr(module, name), _ir.Op), definition.type


def test_op_views_have_popart_classes_and_op_types_with_in_place_twins():
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones((2, 2), np.float32), name="a")
        b = popxl.variable(np.ones((2, 2), np.float32), name="b")
        ops.add(a, b)
        ops.add_(a, b)
        ops.sub(a, b)
        ops.matmul(a, b)
        a.reshape_((4,))
        ops.negate(a)
    assert _types(ir.main_graph) == [("Add", "AddOp"), ("AddLhsInplace", "AddLhsInplaceOp"), ("Sub", "SubtractOp"),
                                     ("MatMul", "MatMulOp"), ("ReshapeInplace", "ReshapeInplaceOp"),
                                     ("Neg", "NegateOp")]
    views = ir.main_graph._pb_graph.getOps()
    assert isinstance(views[1], _ir.op.AddLhsInplaceOp) and not isinstance(views[1], _ir.op.AddOp)
    assert [v.id for v in views] == list(range(100, 106))  # PopART numbers an Ir's ops from 100
    assert views[1].modifiesIndex(0) and not views[1].modifiesIndex(1)
    assert a._pb_tensor.isAliased()  # reshape_ made a view of it


def test_exchange_and_call_ops_live_in_popart_namespaces():
    ir = popxl.Ir()
    with ir.main_graph:
        stream = popxl.h2d_stream((3,), popxl.float32, "x")
        x = ops.host_load(stream)
        graph = ir.create_graph(lambda t: t + 1, x)
        (y,) = ops.call(graph, x)
        out = popxl.d2h_stream((3,), popxl.float32, "y")
        ops.host_store(out, y)
        ops.repeat(graph, 2, x)
    views = ir.main_graph._pb_graph.getOps()
    assert [type(v) for v in views] == [_ir.op.InitOp, _ir.op.exchange.HostLoadOp, _ir.op.CallOp,
                                        _ir.op.exchange.HostStoreOp, _ir.op.LoopOp]
    assert [v.opType() for v in views[:2]] == ["Init", "HostLoad"]
    call = views[2]
    assert call.getCalledGraph() == graph._pb_graph and call.getCalledGraph().id == _ir.GraphId(graph.name)
    assert popxl.Graph._from_pb(call.getCalledGraphs()[0]) is graph
    assert call.opInToSubgraphInIndex(0) == 0 and call.subgraphInToOpInIndex(0) == 0
    assert views[4].getTripCountValue() == 2
    assert y._pb_tensor.getProducer() == call and x._pb_tensor.consumers.getOps() == [call, views[4]]
    assert popxl.Tensor._from_pb_tensor(call.outTensor(0)) is y


def test_graph_and_ir_views_read_ids_indices_and_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(lambda p, q: (p * q, p + q), popxl.TensorSpec((2,), popxl.float32),
                                popxl.TensorSpec((2,), popxl.float32))
    pb_graph = graph._pb_graph
    p, q = graph.inputs
    assert pb_graph.getInputIds() == [p.id, q.id] and pb_graph.getInputIndex(q.id) == 1
    assert pb_graph.getOutputId(1) == graph.outputs[1].id
    assert pb_graph.getInputTensor(0) == p._pb_tensor and pb_graph.getTensor(q.id).info.shape() == [2]
    assert ir._pb_ir.getAllGraphs() == [ir.main_graph._pb_graph, pb_graph]
    assert ir._pb_ir.getGraph(pb_graph.id) == pb_graph and ir._pb_ir.getMainGraph().id.str() == ""
    assert popxl.Ir._from_pb(ir._pb_ir) is ir
    with pytest.raises(KeyError, match="not an input of graph"):
        pb_graph.getInputIndex("nope")


def test_erasing_an_op_through_the_view_changes_the_graph_the_export_and_the_run():
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.array([1.0, 2.0], np.float32), name="v")
        ops.var_updates.accumulate_(v, popxl.constant(np.array([10.0, 10.0], np.float32)))
    (accumulate,) = ir.main_graph._pb_graph.getOps()
    assert isinstance(accumulate, _ir.op.AccumulateOp)

    ir.main_graph._pb_graph.eraseOp(accumulate.id)

    assert ir.main_graph.ops == () and ir.main_graph._pb_graph.getOps() == []
    assert to_json(ir)["graphs"][0]["ops"] == []
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), [1.0, 2.0])


def test_erasing_an_op_in_a_sequence_keeps_the_order_of_its_neighbours():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        v = popxl.variable(np.zeros(2, np.float32))
        ops.var_updates.accumulate_(v, popxl.constant(np.ones(2, np.float32)))
        ops.var_updates.accumulate_(v, popxl.constant(np.ones(2, np.float32)))
        ops.var_updates.accumulator_scale_(v, 3.0)
    first, middle, last = ir.main_graph.ops
    ir.main_graph._pb_graph.eraseOp(ir.main_graph._pb_graph.getOps()[1].id)
    assert ir.main_graph.ops == (first, last)
    assert last.after == (first,)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), [3.0, 3.0])


def test_erasing_an_op_whose_output_is_read_is_refused_and_leaves_the_graph():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        y = ops.exp(x)
        ops.negate(y)
    exp = ir.main_graph._pb_graph.getOps()[0]
    with pytest.raises(RuntimeError, match="still read by"):
        ir.main_graph._pb_graph.eraseOp(exp.id)
    assert [op.type for op in ir.main_graph.ops] == ["exp", "negate"]


def _two_output_program():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0, 3.0], np.float32), name="x")
        graph = ir.create_graph(lambda t: (t * t, t + t), x)
        doubled_used, other = ops.call(graph, x)
        out = popxl.d2h_stream((3,), popxl.float32, "square")
        ops.host_store(out, doubled_used)
    return ir, graph, out, other


def test_removing_a_graph_output_updates_its_call_sites_the_export_and_the_run():
    ir, graph, out, _ = _two_output_program()
    call = ir.main_graph.ops[0]

    graph._pb_graph.removeOutput(1)

    assert len(graph.outputs) == 1 and len(call.outputs) == 1
    exported = {g["name"]: g for g in to_json(ir)["graphs"]}[graph.name]
    assert exported["outputs"] == [graph.outputs[0].id]
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[out], [1.0, 4.0, 9.0])


def test_removing_an_output_whose_call_site_output_is_read_is_refused():
    ir, graph, _, other = _two_output_program()
    with ir.main_graph:
        ops.negate(other)
    with pytest.raises(RuntimeError, match="is read by"):
        graph._pb_graph.removeOutput(1)
    assert len(graph.outputs) == 2 and len(ir.main_graph.ops[0].outputs) == 2


def test_a_graph_marked_not_recursively_differentiable_needs_its_gradient_given():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        inner = ir.create_graph(lambda t: t * t, x)
        outer = ir.create_graph(lambda t: ops.call(inner, t)[0], x)
    inner._pb_graph.setCanBeRecursivelyAutodiffed(False)
    assert not inner._pb_graph.getCanBeRecursivelyAutodiffed()
    with pytest.raises(RuntimeError, match="marked as unsafe to autodiff"):
        popxl.transforms.autodiff(outer)
    inner_grad = popxl.transforms.autodiff(inner)
    outer_grad = popxl.transforms.autodiff(outer, called_graphs_grad_info={inner: inner_grad})
    assert len(outer_grad.graph.outputs) == 1


def test_patterns_are_recorded_on_the_ir_and_checked():
    ir = popxl.Ir()
    assert ir._pb_ir.getPatterns().level is _ir.patterns.PatternsLevel.Default
    ir._pb_ir.setPatterns(_ir.patterns.Patterns(_ir.patterns.PatternsLevel.NoPatterns))
    assert ir._pb_ir.getPatterns() == _ir.patterns.Patterns(_ir.patterns.PatternsLevel.NoPatterns)
    assert not ir._pb_ir.getPatterns().isInPlaceEnabled()
    with pytest.raises(TypeError, match="PatternsLevel"):
        _ir.patterns.Patterns("all")
    with pytest.raises(TypeError, match="Patterns"):
        ir._pb_ir.setPatterns("all")


def test_session_view_writes_and_reads_weights_by_id():
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.zeros(3, np.float32), name="w")
        out = popxl.d2h_stream((3,), popxl.float32, "w_out")
        ops.host_store(out, w + 1)
    with popxl.Session(ir, "ipu_model") as session:
        session._pb_session.writeWeights(popart.PyWeightsIO({w.id: np.array([1.0, 2.0, 3.0], np.float32)}))
        np.testing.assert_array_equal(session.run()[out], [2.0, 3.0, 4.0])
        target = {w.id: np.zeros(3, np.float32)}
        session._pb_session.readWeights(popart.PyWeightsIO(target))
        np.testing.assert_array_equal(target[w.id], [1.0, 2.0, 3.0])
        with pytest.raises(KeyError, match="no variable"):
            session._pb_session.writeWeights(popart.PyWeightsIO({"missing": np.zeros(3, np.float32)}))


def test_views_cannot_be_constructed_directly():
    for cls in (_ir.Ir, _ir.Graph, _ir.Tensor, _ir.Op, _ir.op.AddOp):
        with pytest.raises(TypeError, match="cannot be constructed"):
            cls()


def test_replica_grouping_view_of_a_strided_grouping():
    ir = popxl.Ir(replication=8)
    view = ir.replica_grouping(stride=2, group_size=4)._pb_replica_grouping
    assert isinstance(view, _ir.ReplicaGrouping)
    assert (view.getStride(), view.getGroupSize(), view.getNumReplicas()) == (2, 4, 8)
    with pytest.raises(NotImplementedError, match="constant stride"):
        ir.replica_grouping_from_assignments([0, 1, 1, 0, 0, 1, 1, 0])._pb_replica_grouping


def test_a_strided_grouping_gives_popart_variable_settings():
    ir = popxl.Ir(replication=8)
    grouping = ir.replica_grouping(stride=2, group_size=4)
    settings = grouping._to_variable_settings("all_replicas")
    assert isinstance(settings, popart.VariableSettings) and not settings.isUsingCommGroup()
    assert (settings.getStride(), settings.getGroupSize()) == (2, 4)
    assert settings.retrievalMode is popart.VariableRetrievalMode.AllReplicas
    assert settings.getGroupCount(8) == 2 and settings.numReplicasReturningVariable(8) == 8
    assert grouping._to_variable_settings().retrievalMode is popart.VariableRetrievalMode.OnePerGroup
    with pytest.raises(ValueError, match="retrieval_mode"):
        grouping._to_variable_settings("every_replica")
    with pytest.raises(NotImplementedError, match="constant stride"):
        ir.replica_grouping_from_assignments([0, 1, 1, 0, 0, 1, 1, 0])._to_variable_settings()
    comm_group = popart.VariableSettings(popart.CommGroup(popart.CommGroupType.Consecutive, 2))
    assert comm_group.isUsingCommGroup()
    with pytest.raises(ValueError, match="CommGroup"):
        comm_group.getStride()


def test_strided_variable_settings_reach_the_builder_only_as_consecutive_groups():
    builder = popart.Builder()
    builder.embedReplicationFactor(4)
    weight = builder.addInitializedInputTensor(np.ones((2, 3), np.float32),
                                               popart.VariableSettings(1, 2, popart.VariableRetrievalMode.OnePerGroup))
    assert weight
    with pytest.raises(ValueError, match="has no stride"):
        builder.addInitializedInputTensor(np.ones((2, 3), np.float32), popart.VariableSettings(2, 2))


def test_readme_internal_ir_example_runs_and_prints_what_it_says():
    import contextlib
    import io
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Graphcore's PopXL tutorials and popxl-addons", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    printed = io.StringIO()
    namespace = {}
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), namespace)
    assert printed.getvalue().strip() == "AccumulateOp Accumulate 100"
    assert namespace["ir"].main_graph.ops == ()


def test_conv_options_come_as_a_copy_that_set_conv_options_writes_back():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((1, 2, 3, 3), np.float32))
        w = popxl.variable(np.ones((2, 2, 1, 1), np.float32))
        plain = ops.conv(x, w)
        ops.conv(x, w, available_memory_proportions=[0.4])
    first, second = [op for op in ir.main_graph._pb_graph.getOps() if isinstance(op, _ir.op.ConvOp)]
    assert first.getConvOptions().availableMemoryProportions == []
    options = second.getConvOptions()
    assert options.availableMemoryProportions == [0.4]
    options.availableMemoryProportions = [0.25]
    assert second.getConvOptions().availableMemoryProportions == [0.4]  # a copy
    second.setConvOptions(options)
    assert second.getConvOptions().availableMemoryProportions == [0.25]
    options.availableMemoryProportions = [1.5]
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        second.setConvOptions(options)
    assert "available_memory_proportions" not in plain.producer.attrs


def test_the_adam_updater_and_in_place_updates_are_optimiser_ops_and_arithmetic_is_not():
    ir = popxl.Ir()
    with ir.main_graph:
        m, v = popxl.variable(np.ones(2, np.float32)), popxl.variable(np.ones(2, np.float32))
        ops.var_updates.adam_updater(m, v)
        ops.var_updates.accumulate_(m, v)
        ops.add(m, v)
    assert [op.isOptimizerOp() for op in ir.main_graph._pb_graph.getOps()] == [True, True, False]


def test_popxl_cache_dir_turns_on_the_executable_cache_in_the_options(monkeypatch):
    monkeypatch.delenv("POPXL_CACHE_DIR", raising=False)
    assert popxl.Ir()._pb_ir.getSessionOptions().enableEngineCaching is False
    monkeypatch.setenv("POPXL_CACHE_DIR", "/tmp/cache")
    options = popxl.Ir()._pb_ir.getSessionOptions()
    assert options.enableEngineCaching is True and options.cachePath == "/tmp/cache"
