"""PopART training benchmark, a ratio measured in one run: a TrainingSession step of an MLP
(784-256-256-10, batch 32, softmax and NLL loss, SGD) against the same training step written with
popxl (a forward graph, its autodiff gradient graph, in-place weight updates).

Run with ``python -m pytest tests/benchmarks/bench_popart_training.py -o python_files='bench_*.py' -s``.
"""
import numpy as np

import popart
import popxl
import popxl.ops as ops
from bench_runtime import best_time
from popxl.transforms import autodiff

SIZES, BATCH, LR = (784, 256, 256, 10), 32, 0.01


def weights_and_data():
    rng = np.random.default_rng(0)
    weights = [(rng.standard_normal((a, b)).astype(np.float32) * 0.05, np.zeros(b, np.float32))
               for a, b in zip(SIZES, SIZES[1:])]
    data = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    return weights, data, labels


def popart_session(weights):
    builder = popart.Builder()
    h = x = builder.addInputTensor(popart.TensorInfo("FLOAT", [BATCH, SIZES[0]]), "x")
    for i, (w, b) in enumerate(weights):
        h = builder.aiOnnx.add([builder.aiOnnx.matmul([h, builder.addInitializedInputTensor(w, f"w{i}")]),
                                builder.addInitializedInputTensor(b, f"b{i}")])
        if i < len(weights) - 1:
            h = builder.aiOnnx.relu([h])
    probs = builder.aiOnnx.softmax([h])
    label = builder.addInputTensor(popart.TensorInfo("INT32", [BATCH]), "label")
    loss = builder.aiGraphcore.nllloss([probs, label], popart.ReductionType.Mean)
    session = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(1, {loss: popart.AnchorReturnType("ALL")}),
                                     loss, popart.ConstSGD(LR), popart.DeviceManager().createIpuModelDevice({}))
    session.prepareDevice()
    session.weightsFromHost()
    return session, x, label, loss


def popxl_session(weights):
    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([BATCH, SIZES[0]], popxl.float32, name="x")
        label_stream = popxl.h2d_stream([BATCH], popxl.int32, name="label")
        loss_stream = popxl.d2h_stream([], popxl.float32, name="loss")
        variables = [popxl.variable(a, name=f"{n}{i}") for i, (w, b) in enumerate(weights)
                     for n, a in (("w", w), ("b", b))]

        def forward(x, label, *ws):
            for i in range(len(weights)):
                x = x @ ws[2 * i] + ws[2 * i + 1]
                x = ops.relu(x) if i < len(weights) - 1 else x
            return ops.nll_loss(ops.softmax(x, axis=1), label, reduction="mean")

        fwd = ir.create_graph(forward, x_stream.spec, label_stream.spec, *variables)
        grad_info = autodiff(fwd, grads_required=fwd.inputs[2:])
        site = ops.call_with_info(fwd, ops.host_load(x_stream), ops.host_load(label_stream), *variables)
        ops.host_store(loss_stream, site.parent_output(0))
        grads = ops.call(grad_info.graph, popxl.constant(1.0, popxl.float32), inputs_dict=grad_info.inputs_dict(site))
        for var, grad in zip(variables, grads):
            ops.var_updates.accumulate_(var, grad, -LR)
    session = popxl.Session(ir, "ipu_model")
    session.progress = False
    return session, x_stream, label_stream, loss_stream


def test_popart_training_step_against_popxl():
    weights, data, labels = weights_and_data()
    session, x, label, loss = popart_session(weights)
    anchors = session.initAnchorArrays()
    stepio = popart.PyStepIO({x: data, label: labels}, anchors)
    reference, x_stream, label_stream, loss_stream = popxl_session(weights)
    with reference:
        first = reference.run({x_stream: data, label_stream: labels})[loss_stream]
        session.run(stepio)
        np.testing.assert_allclose(anchors[loss], first, rtol=1e-5)
        outputs = reference.create_host_outputs()
        baseline = best_time(lambda: reference.run_with_outputs({x_stream: data, label_stream: labels}, outputs),
                             repeats=30)
    ours = best_time(lambda: session.run(stepio), repeats=30)
    ratio = ours / baseline
    print(f"\nMLP training step: PopART {ours * 1e3:.3f} ms, popxl {baseline * 1e3:.3f} ms, ratio {ratio:.2f} "
          "(target <= 1.2)")
    assert ratio <= 1.2
