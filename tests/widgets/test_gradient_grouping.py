"""Gradient graphs keep the name scopes of their forward ops, so that a grouped view of a gradient graph
groups as the forward graph does."""
import numpy as np

import popxl
import popxl.ops as ops
from popxl.transforms import autodiff
from workbench.export.grouping import group_graph


def scoped_forward():
    ir = popxl.Ir()
    with ir.main_graph:
        def forward(x, w1, w2):
            with popxl.name_scope("encoder"):
                x = ops.relu(x @ w1)
            with popxl.name_scope("head"):
                return ops.mean(ops.tanh(x @ w2))

        spec = popxl.TensorSpec((2, 4), popxl.float32)
        weight = popxl.TensorSpec((4, 4), popxl.float32)
        graph = ir.create_graph(forward, spec, weight, weight)
    return ir, graph


def test_gradient_ops_take_the_scope_of_the_forward_op_they_differentiate():
    ir, forward = scoped_forward()
    with ir.main_graph:
        grad = autodiff(forward).graph
    scopes = {op.name.rpartition("/")[0] for op in grad.ops}
    assert {"encoder", "head"} <= scopes, sorted(scopes)
    relu_grads = [op for op in grad.ops if op.type == "relu_grad"]
    assert relu_grads and all(op.name.startswith("encoder/") for op in relu_grads)
    assert all(op.name.startswith(("encoder/", "head/")) for op in grad.ops)


def test_a_scope_open_at_autodiff_time_encloses_the_forward_scopes_once():
    ir, forward = scoped_forward()
    with ir.main_graph, popxl.name_scope("outer"):
        grad = autodiff(forward).graph
    scopes = {op.name.rpartition("/")[0] for op in grad.ops}
    assert {"outer/encoder", "outer/head"} <= scopes, sorted(scopes)


def test_forward_values_enter_the_gradient_graph_under_their_own_names_once():
    ir, forward = scoped_forward()
    with ir.main_graph:
        plain = autodiff(forward).graph
    with ir.main_graph, popxl.name_scope("outer"):
        enclosed = autodiff(forward).graph
    forward_names = {t.name for t in forward.tensors}
    activations = [t.name for t in plain.inputs if not t.name.startswith("Gradient___")]
    assert activations and set(activations) <= forward_names, activations  # not encoder/encoder/relu
    assert any(name.startswith("encoder/") for name in activations)
    assert [t.name for t in enclosed.inputs if "Gradient___" not in t.name] == [
        f"outer/{name}" for name in activations]


def test_the_grouped_gradient_graph_has_the_forward_graphs_scopes():
    ir, forward = scoped_forward()
    with ir.main_graph:
        grad = autodiff(forward).graph
    forward_labels = {group.label for group in group_graph(forward, max_items=3).walk() if group.kind == "scope"}
    grad_labels = {group.label for group in group_graph(grad, max_items=3).walk() if group.kind == "scope"}
    assert forward_labels == {"encoder", "head"} and grad_labels == forward_labels


def test_gradients_are_unchanged_by_their_scopes():
    ir, forward = scoped_forward()
    with ir.main_graph:
        info = autodiff(forward)
        x, w1, w2 = (popxl.variable(np.full(shape, value, np.float32)) for shape, value in
                     (((2, 4), 0.5), ((4, 4), 0.25), ((4, 4), -0.125)))
        site = ops.call_with_info(forward, x, w1, w2)
        grads = ops.call(info.graph, popxl.constant(1.0, popxl.float32), inputs_dict=info.inputs_dict(site))
        streams = [popxl.d2h_stream(g.shape, g.dtype) for g in grads]
        for stream, g in zip(streams, grads):
            ops.host_store(stream, g)
    with popxl.Session(ir, "ipu_model") as session:
        got = session.run()
    xv, w1v, w2v = np.full((2, 4), 0.5), np.full((4, 4), 0.25), np.full((4, 4), -0.125)
    hidden = np.maximum(xv @ w1v, 0)
    out = np.tanh(hidden @ w2v)
    d_out = (1 - out ** 2) / out.size
    d_w2 = hidden.T @ d_out
    d_hidden = (d_out @ w2v.T) * (xv @ w1v > 0)
    expected = [xv.T @ d_hidden, d_w2]
    for stream, value in zip(streams[-2:], expected):
        np.testing.assert_allclose(got[stream], value, rtol=1e-5)
