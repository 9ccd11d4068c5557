"""Moving ops between graphs one at a time through ``popart._internal.ir``, as pipelining passes written for
PopART do: copy an op into another graph, connect its copy, disconnect and erase the original, and carry a
new value round a loop. Each program is checked against NumPy, and the views and the JSON export see the
edits."""
import numpy as np
import pytest

import popart._internal.ir as _ir
import popxl
import popxl.ops as ops
from workbench.analysis.call_tree import call_tree
from workbench.export.json_schema import to_json


def move_ops_into_graph(ir, ops_to_move, target):
    """A small pass in the style of popxl-addons: each op of ``ops_to_move`` is copied into ``target``; a
    tensor made outside ``target`` becomes a new input of it, bound to the original tensor at the call."""
    copies, bound_inputs = {}, {}
    for op in ops_to_move:
        copy = op.cloneIntoGraph(target._pb_graph)
        for index, tensor in op.getInputIndexMap().items():
            if tensor.id not in copies:
                outer = popxl.Tensor._from_pb_tensor(tensor)
                with target:
                    inner = popxl.graph_input(outer.shape, outer.dtype, outer.name)
                bound_inputs[inner] = outer
                copies[tensor.id] = inner
            copy.connectInTensor(index, copies[tensor.id].id)
        for index, tensor in op.getOutputIndexMap().items():
            name = popxl.Tensor._from_pb_tensor(tensor).name
            copy.createAndConnectOutTensor(index, target._create_tensor_id(name))
            copies[tensor.id] = popxl.Tensor._from_pb_tensor(copy.outTensor(index))
        copy.setup()
        op.disconnectAllInputs()
        op.disconnectAllOutputs()
        ir.main_graph._pb_graph.eraseOp(op.id)
    return copies, bound_inputs


def test_op_views_equal_and_hash_like_the_ops_that_hooks_report():
    ir = popxl.Ir()
    made = []
    with ir.main_graph:
        handle = ir.main_graph.register_op_created_hook(made.append)
        x = popxl.variable(np.ones(2, np.float32))
        ops.exp(ops.negate(x))
        ir.main_graph.remove_op_created_hook(handle)
    views = ir.main_graph._pb_graph.getOpSchedule(False)
    assert views == made and [v in made for v in views] == [True, True]
    stage_of = {op: stage for stage, op in enumerate(made)}
    assert [stage_of[v] for v in views] == [0, 1] and set(views) == set(made)


def test_ops_moved_into_a_new_graph_compute_what_they_computed():
    data = np.array([0.5, -1.0, 2.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(data, name="x")
        y = ops.exp(x) * 2.0
        z = ops.negate(y)
        kept = ir.main_graph._pb_graph.getOpSchedule(False)
        moved = [op for op in kept if op.opType() in ("Exp", "Mul", "Neg")]
    stage = ir.create_empty_graph("stage")
    copies, bound = move_ops_into_graph(ir, moved, stage)
    with stage:
        popxl.graph_output(copies[z.id])
    with ir.main_graph:
        (result,) = ops.call(stage, inputs_dict=bound)
        out = popxl.d2h_stream(result.shape, result.dtype, "out")
        ops.host_store(out, result)

    assert [op.opType() for op in stage._pb_graph.getOps()] == ["Exp", "Mul", "Neg"]
    exported = {g["name"]: g for g in to_json(ir)["graphs"]}
    assert [op["type"] for op in exported["stage"]["ops"]] == ["exp", "mul", "negate"]
    assert [op["type"] for op in exported[""]["ops"]] == ["call", "host_store"]
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_allclose(session.run()[out], -(np.exp(data) * 2.0), rtol=1e-6)


def test_a_loop_carries_a_value_its_graph_returns_through_a_wrapper_graph():
    """The repeated graph returns its carried input unchanged; a new output (``c + w``) is marked on it,
    the wrapper graph's call gains that output, and the loop carries it instead: c + count * w."""
    c0, w_data, count = np.array([1.0, 2.0], np.float32), np.array([0.5, 3.0], np.float32), 4
    ir = popxl.Ir()
    with ir.main_graph:
        c = popxl.variable(c0, name="c")
        w = popxl.variable(w_data, name="w")
        body = ir.create_graph(lambda carried, step: carried, c, w)
        with body:
            total = body.inputs[0] + body.inputs[1]
        loop = ops.repeat_with_info(body, count, c, w)._op
        out = popxl.d2h_stream((2,), popxl.float32, "out")
        ops.host_store(out, loop.outputs[0])

    loop_view = ir.main_graph._pb_graph.getOps()[0]
    assert isinstance(loop_view, _ir.op.LoopOp) and list(loop_view.getInputIndexMap()) == [2, 3]
    assert loop_view.opInToSubgraphInIndex(3) == 1 and loop_view.subgraphInToOpInIndex(1) == 3
    body._pb_graph.markAsOutput(total.id)
    wrapper = popxl.Graph._from_pb(loop_view.getCalledGraphs()[0])
    (call,) = [op for op in wrapper._pb_graph.getOps() if isinstance(op, _ir.op.CallOp)]
    assert call.getCalledGraphs()[0].id == body._pb_graph.id
    carried_id = wrapper._create_tensor_id("carried_total")
    call.createAndConnectOutTensor(body._pb_graph.getOutputIndex(total.id), carried_id)
    call.setup()
    loop_view.addLoopOutput(0, loop_view.outId(0), carried_id, True)

    assert wrapper.outputs[0].id == carried_id and len(loop.outputs) == 1
    tree = call_tree(ir)  # what the call-tree view draws: main repeats the wrapper, which calls the body
    assert [(e.caller.label, e.callee.label, e.kind) for e in tree.edges] == [
        ("main", wrapper.label, "repeat"), (wrapper.label, body.label, "call")]
    assert tree.node(body).runs_per_session_run == count
    exported = {g["name"]: g for g in to_json(ir)["graphs"]}
    assert exported[wrapper.name]["outputs"] == [carried_id]
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_allclose(session.run()[out], c0 + count * w_data, rtol=1e-6)


def test_an_ipu_copy_moved_into_a_graph_reads_its_input_on_the_source_ipu():
    data = np.array([1.0, 2.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(0):
            x = popxl.variable(data, name="x")
        with popxl.ipu(1):
            on_one = ops.ipu_copy(x, 1)
            doubled = on_one + on_one
        (copy_op,) = [op for op in ir.main_graph._pb_graph.getOps() if isinstance(op, _ir.op.IpuCopyOp)]
    copies = ir.create_empty_graph("copies")
    with copies, popxl.ipu(1):  # made where nothing reads it yet; the copy says it comes from IPU 0
        inner = popxl.graph_input(x.shape, x.dtype, "x")
    clone = copy_op.cloneIntoGraph(copies._pb_graph)
    clone.connectInTensor(0, inner.id, copy_op.getSourceIpu(x.id))
    assert inner.ipu == 0
    with pytest.raises(ValueError, match="lives on IPU 0, not on the given source IPU 1"):
        clone.connectInTensor(0, inner.id, 1)
    clone.createAndConnectOutTensor(0, copies._create_tensor_id("x_ipu1"))
    assert clone.outTensor(0).getGraph().id == copies._pb_graph.id
    moved = popxl.Tensor._from_pb_tensor(clone.outTensor(0))
    assert (moved.ipu, clone.getDestIpu()) == (1, 1)
    with copies:
        popxl.graph_output(moved)
    with ir.main_graph, popxl.ipu(1):
        (copied,) = ops.call(copies, x)
        out = popxl.d2h_stream((2,), popxl.float32, "out")
        ops.host_store(out, copied + doubled)
    with popxl.Session(ir, "ipu_hw") as session:
        np.testing.assert_array_equal(session.run()[out], 3 * data)


def test_rewiring_mistakes_are_clear_errors_that_change_nothing():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        ops.exp(x)
        other = ir.create_empty_graph("other")
    exp = ir.main_graph._pb_graph.getOps()[0]
    copy = exp.cloneIntoGraph(other._pb_graph)
    with pytest.raises(KeyError, match="no tensor with id 'x'"):
        copy.connectInTensor(0, "x")
    with pytest.raises(IndexError, match="input 1 can only be connected after"):
        with other:
            inner = popxl.graph_input((2,), popxl.float32, "x")
        copy.connectInTensor(1, inner.id)
    assert copy.inTensorCount() == 0
    with pytest.raises(RuntimeError, match="still read by|is still read"):
        with ir.main_graph:
            ops.negate(popxl.Tensor._from_pb_tensor(exp.outTensor(0)))
        ir.main_graph._pb_graph.eraseOp(exp.id)
    loop_ir = popxl.Ir()
    with loop_ir.main_graph:
        c = popxl.variable(np.ones(2, np.float32))
        body = loop_ir.create_graph(lambda t: t + 1.0, c)
        ops.repeat(body, 2, c)
    (loop,) = loop_ir.main_graph._pb_graph.getOps()
    with pytest.raises(NotImplementedError, match="overwrite=True"):
        loop.addLoopOutput(0, loop.outId(0), body.outputs[0].id, False)
    with pytest.raises(ValueError, match="not 'elsewhere'"):
        loop.addLoopOutput(0, "elsewhere", body.outputs[0].id, True)


def test_ops_moved_into_a_repeated_graph_keep_their_order_and_later_ops_follow_the_loop():
    v0, w1, w2, w3 = (np.array(d, np.float32) for d in ([1.0, 2.0], [0.5, 0.5], [1.0, -1.0], [10.0, 10.0]))
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        v = popxl.variable(v0, name="v")
        weights = [popxl.variable(w, name=f"w{i}") for i, w in enumerate((w1, w2, w3))]
        for w in weights:
            ops.var_updates.accumulate_(v, w)
    first, second, last = ir.main_graph._pb_graph.getOpSchedule(False)
    body = ir.create_empty_graph("body")
    copies, inner_of = {}, {}
    for op in (first, second):
        copy = op.cloneIntoGraph(body._pb_graph)
        for index, tensor in op.getInputIndexMap().items():
            if tensor.id not in inner_of:
                outer = popxl.Tensor._from_pb_tensor(tensor)
                with body:
                    inner_of[tensor.id] = (popxl.graph_input(outer.shape, outer.dtype, outer.name, by_ref=True), outer)
            copy.connectInTensor(index, inner_of[tensor.id][0].id)
        copy.createAndConnectOutTensor(0, body._create_tensor_id("updated"))
        copy.setup()
        copies[op] = [copy]
    with ir.main_graph:
        loop = ops.repeat_with_info(body, 3, inputs_dict=dict(inner_of.values()))._op
    ir.main_graph._pb_graph.topoCons().transferToSubgraph(loop, copies, True)
    for op in (second, first):
        op.disconnectAllInputs()
        op.disconnectAllOutputs()
        ir.main_graph._pb_graph.eraseOp(op.id)

    first_copy, second_copy = (copies[op][0]._op for op in (first, second))
    assert second_copy.after == (first_copy,) and last._op.after == (loop,)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        np.testing.assert_allclose(session.get_tensor_data(v), v0 + 3 * (w1 + w2) + w3, rtol=1e-6)


def test_a_two_stage_pipeline_built_by_moving_ops_streams_what_the_plain_program_streams():
    """Stage 0 (IPU 0) loads and negates, a copy sends the result to IPU 1, stage 1 takes exp and stores.
    The ops are moved into one graph per stage; the stages then run once to fill the pipeline, in a loop
    that carries the copied value from one step to the next, and once to empty it."""
    steps, data = 5, np.linspace(-1.0, 1.0, 10, dtype=np.float32).reshape(5, 2)
    ir = popxl.Ir()
    made = {"stage0": [], "copy": [], "stage1": []}
    with ir.main_graph:
        x_stream = popxl.h2d_stream((2,), popxl.float32, "x")
        y_stream = popxl.d2h_stream((2,), popxl.float32, "y")
        for part, ipu in (("stage0", 0), ("copy", 0), ("stage1", 1)):
            handle = ir.main_graph.register_op_created_hook(made[part].append)
            with popxl.ipu(ipu):
                if part == "stage0":
                    negated = ops.negate(ops.host_load(x_stream))
                elif part == "copy":
                    copied = ops.ipu_copy(negated, 1)
                else:
                    ops.host_store(y_stream, ops.exp(copied))
            ir.main_graph.remove_op_created_hook(handle)

    schedule = ir.main_graph._pb_graph.getOpSchedule(False)
    returns = {"stage0": [negated.id], "copy": [copied.id], "stage1": []}
    stages, outer_ids = {}, {}
    for part, produced in (("stage0", negated), ("copy", copied), ("stage1", None)):
        graph = ir.create_empty_graph(part)
        members = set(made[part])
        copies, bound = move_ops_into_graph(ir, [op for op in schedule if op in members], graph)
        if produced is not None:
            with graph:
                popxl.graph_output(copies[produced.id])
        stages[part], outer_ids[part] = graph, {inner: outer.id for inner, outer in bound.items()}

    def run(part, values):
        """Call a stage with the current value of each tensor it reads; record what it returns."""
        outputs = ops.call(stages[part], inputs_dict={inner: values[i] for inner, i in outer_ids[part].items()})
        values.update(zip(returns[part], outputs))

    with ir.main_graph, popxl.in_sequence(True):
        values = {}
        run("stage0", values)
        run("copy", values)
        body = ir.create_graph(lambda carried: carried, values[copied.id])
        loop = ops.repeat_with_info(body, steps - 1, values[copied.id])._op
        with body, popxl.in_sequence(True):
            inside = {copied.id: body.inputs[0]}
            for part in ("stage1", "stage0", "copy"):
                run(part, inside)
    loop_view = [op for op in ir.main_graph._pb_graph.getOps() if isinstance(op, _ir.op.LoopOp)][0]
    body._pb_graph.markAsOutput(inside[copied.id].id)
    wrapper = popxl.Graph._from_pb(loop_view.getCalledGraphs()[0])
    (call,) = [op for op in wrapper._pb_graph.getOps() if isinstance(op, _ir.op.CallOp)]
    next_id = wrapper._create_tensor_id("next_copied")
    call.createAndConnectOutTensor(body._pb_graph.getOutputIndex(inside[copied.id].id), next_id)
    call.setup()
    loop_view.addLoopOutput(0, loop_view.outId(0), next_id, True)
    with ir.main_graph, popxl.in_sequence(True):
        run("stage1", {copied.id: loop.outputs[0]})

    ir.num_host_transfers = steps
    with popxl.Session(ir, "ipu_hw") as session:
        result = session.run({x_stream: data})[y_stream]
    np.testing.assert_allclose(result, np.exp(-data), rtol=1e-6)


def test_a_session_refuses_an_op_reading_a_tensor_whose_producer_was_disconnected():
    from workbench.analysis import InvalidIrError

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        ops.negate(ops.exp(x))
    exp = ir.main_graph._pb_graph.getOps()[0]
    exp.disconnectAllInputs()
    exp.disconnectAllOutputs()
    ir.main_graph._pb_graph.eraseOp(exp.id)
    with pytest.raises(InvalidIrError, match="reads tensor 'exp', which no op produces"):
        popxl.Session(ir, "ipu_model")


def test_a_copied_io_tile_copy_sends_its_output_to_the_io_tiles():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        with popxl.io_tiles():
            staged = ops.io_tile_copy(x)
    (copy_op,) = ir.main_graph._pb_graph.getOps()
    graph = ir.create_empty_graph("staging")
    with graph:
        inner = popxl.graph_input((2,), popxl.float32, "x")
    clone = copy_op.cloneIntoGraph(graph._pb_graph)
    clone.connectInTensor(0, inner.id)
    clone.createAndConnectOutTensor(0, graph._create_tensor_id("staged"))
    moved = popxl.Tensor._from_pb_tensor(clone.outTensor(0))
    assert (staged.tile_set, moved.tile_set, moved.ipu) == ("io", "io", 0)
