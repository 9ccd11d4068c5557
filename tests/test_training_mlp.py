"""End to end: an MLP classifier trained with autodiff and SGD with momentum, in a repeat loop that
loads one batch per iteration, matches a NumPy re-implementation of the same steps."""
import numpy as np

import popxl
import popxl.ops as ops

FEATURES, HIDDEN, CLASSES, BATCH, STEPS_PER_RUN, RUNS = 4, 16, 3, 16, 20, 4
LR, MOMENTUM = 0.1, 0.9


def blobs(steps: int, seed: int = 0):
    """Three well separated Gaussian clusters: a learnable data set, one batch per step."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLASSES, FEATURES)).astype(np.float32) * 3
    labels = rng.integers(0, CLASSES, (steps, BATCH)).astype(np.int32)
    x = centres[labels] + rng.standard_normal((steps, BATCH, FEATURES)).astype(np.float32) * 0.5
    return x.astype(np.float32), labels


def initial_weights():
    rng = np.random.default_rng(1)
    return {"W1": (rng.standard_normal((FEATURES, HIDDEN)) * 0.3).astype(np.float32),
            "b1": np.zeros(HIDDEN, np.float32),
            "W2": (rng.standard_normal((HIDDEN, CLASSES)) * 0.3).astype(np.float32),
            "b2": np.zeros(CLASSES, np.float32)}


def forward(x, labels, W1, b1, W2, b2):
    hidden = ops.relu(x @ W1 + b1)
    probs = ops.softmax(hidden @ W2 + b2, axis=-1)
    return ops.nll_loss(probs, labels)


def build():
    ir = popxl.Ir()
    start = initial_weights()
    with ir.main_graph:
        x_stream = popxl.h2d_stream([BATCH, FEATURES], popxl.float32, name="x")
        label_stream = popxl.h2d_stream([BATCH], popxl.int32, name="labels")
        loss_stream = popxl.d2h_stream([], popxl.float32, name="loss")
        weights = [popxl.variable(value, name=name) for name, value in start.items()]
        velocities = [popxl.variable(np.zeros_like(value), name=f"v_{name}") for name, value in start.items()]
        x_spec = popxl.TensorSpec((BATCH, FEATURES), popxl.float32)
        label_spec = popxl.TensorSpec((BATCH,), popxl.int32)
        fwd = ir.create_graph(forward, x_spec, label_spec, *weights)
        grad_info = popxl.transforms.autodiff(fwd, grads_required=fwd.inputs[2:])

        def step(params: popxl.TensorByRef, moments: popxl.TensorByRef):
            x, labels = ops.host_load(x_stream), ops.host_load(label_stream)
            fwd_info = ops.call_with_info(fwd, x, labels, *params)
            ops.host_store(loss_stream, fwd_info.parent_output(0))
            grads = ops.call(grad_info.graph, popxl.constant(1.0, popxl.float32),
                             inputs_dict=grad_info.inputs_dict(fwd_info))
            for w, v, g in zip(params, moments, grads):
                ops.var_updates.accumulator_scale_(v, MOMENTUM)   # v = momentum * v + g
                ops.var_updates.accumulate_(v, g)
                ops.var_updates.accumulate_(w, v, -LR)            # w = w - lr * v

        with popxl.in_sequence():
            body = ir.create_graph(step, weights, velocities)
        ops.repeat(body, STEPS_PER_RUN, weights, velocities)
    ir.num_host_transfers = STEPS_PER_RUN
    return ir, x_stream, label_stream, loss_stream, weights


def numpy_training(x, labels):
    w = initial_weights()
    v = {name: np.zeros_like(value) for name, value in w.items()}
    losses = []
    for batch, target in zip(x, labels):
        pre = batch @ w["W1"] + w["b1"]
        hidden = np.maximum(pre, 0)
        logits = hidden @ w["W2"] + w["b2"]
        exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = exp / exp.sum(axis=-1, keepdims=True)
        losses.append(-np.mean(np.log(probs[np.arange(BATCH), target])))
        d_logits = probs.copy()
        d_logits[np.arange(BATCH), target] -= 1
        d_logits /= BATCH
        d_hidden = (d_logits @ w["W2"].T) * (pre > 0)
        grads = {"W1": batch.T @ d_hidden, "b1": d_hidden.sum(axis=0),
                 "W2": hidden.T @ d_logits, "b2": d_logits.sum(axis=0)}
        for name in w:
            v[name] = MOMENTUM * v[name] + grads[name]
            w[name] = w[name] - LR * v[name]
    return w, np.array(losses)


def test_mlp_training_with_autodiff_and_momentum_matches_numpy():
    ir, x_stream, label_stream, loss_stream, weights = build()
    x, labels = blobs(STEPS_PER_RUN * RUNS)
    losses = []
    with popxl.Session(ir, "ipu_model") as session:
        for run in range(RUNS):
            batches = slice(run * STEPS_PER_RUN, (run + 1) * STEPS_PER_RUN)
            outputs = session.run({x_stream: x[batches], label_stream: labels[batches]})
            losses.append(outputs[loss_stream])
        trained = session.get_tensors_data(weights)
    losses = np.concatenate(losses)
    expected_weights, expected_losses = numpy_training(x, labels)

    assert losses[0] > 0.5 and losses[-5:].mean() < 0.05, losses
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-4, atol=1e-5)
    for tensor in weights:
        np.testing.assert_allclose(trained[tensor], expected_weights[tensor.name], rtol=1e-5, atol=1e-5)
