"""The graph pictures of real programs that the picture tests measure: each a program, a graph, a level of detail
and the clicks that open its groups and calls."""
import numpy as np

import popxl
import popxl.ops as ops
from picture_pixels import Pixels
from real_programs import resnet50_session, transformer, wide_program
from support.programs import mlp_training
from workbench.widgets import GraphView


def gradient_graph(layers: int):
    ir, _ = mlp_training(layers=layers)
    return ir, next(graph for graph in ir.graphs if graph.name.endswith("forward_grad"))


def step_graph():
    ir, _ = mlp_training()
    return ir, next(graph for graph in ir.graphs if graph.name.endswith(".step"))


PICTURES = {
    "MLP backward graph, ops only": lambda: (gradient_graph(4), "auto"),
    "MLP backward graph, every tensor": lambda: (gradient_graph(4), "full"),
    "MLP training step": lambda: (step_graph(), "auto"),
    "300-op backward graph": lambda: (gradient_graph(49), "auto"),
    "transformer main graph, its 48 optimizer ops folded into rows": lambda: (transformer_main(), "auto"),
    "transformer main graph as it opens, its optimizer one group": lambda: (transformer_main(), "auto"),
    "10,003-op program grouped, a group open in an open group": lambda: (wide(), "auto", open_first_groups),
    "transformer main graph in a 630-px output": lambda: (transformer_main(), "auto", fit_630),
    "ResNet-50 op by op": lambda: (resnet_main(), "auto"),
    "transformer forward graph in a 630-px output": lambda: (transformer_forward(), "auto", fit_630),
    "transformer main graph, its forward call expanded": lambda: (transformer_main(), "auto", expand_forward_call),
    "transformer main graph in a 630-px output, its forward call expanded":
        lambda: (transformer_main(), "auto", fit_630, expand_forward_call),
    "transformer main graph, its forward call expanded, then fitted to a 630-px output":
        lambda: (transformer_main(), "auto", expand_forward_call, fit_630),
    "transformer backward graph grouped": lambda: (transformer_backward(), "auto"),
    "transformer backward graph grouped, a layer open in its IPU's group":
        lambda: (transformer_backward(), "auto", open_path("IPU 0", "layer2")),
    "transformer backward graph, every one of its 44 groups open": lambda: (transformer_backward(), "auto", open_every_group),
    "ResNet-50 grouped, a stage and a block in it open": lambda: (resnet_main(), "auto", open_resnet_block),
    "the transformer's main graph grouped in a 630-px output": lambda: (transformer_main(), "auto", fit_630),
    "the transformer's optimizer, a run of 8 of its units open":
        lambda: (transformer_main(), "auto", open_path("optimizer", OPTIMIZER_RUN)),
    "the transformer's optimizer, a run of 8 of its units open in a 630-px output":
        lambda: (transformer_main(), "auto", fit_630, open_path("optimizer", OPTIMIZER_RUN)),
    "a call inside a call, both expanded": lambda: (nested_calls(), "auto", expand_both_calls),
    "a call inside a call, both expanded, every tensor": lambda: (nested_calls(), "full", expand_both_calls),
}


OPTIMIZER_RUN = "layer0.qkv … layer1.ff2"  # the first of the optimizer's 3 runs of 8 units, one per weight


def transformer_backward():
    ir = transformer()[0]
    return ir, next(graph for graph in ir.graphs if graph.name.endswith("forward_grad"))


def open_path(*labels: str):
    """Opens the group of each label in turn, each a child of the one before (the first of the top level)."""
    def opens(view):
        view.grouped = True
        view.refresh()
        group = view.groups
        for label in labels:
            group = next(child for child in group.children if child.label == label)
            view.open_group(group.id)
        assert len(view.picture.boxes) == len(labels)
    return opens


def open_every_group(view):
    """Opens every group (44 in the transformer's backward graph) at once."""
    view.grouped = True
    view.refresh()
    for group in view.groups.walk():
        if group.parent is not None:
            view.opened.add(group.id)
    view.open_group(next(iter(view.opened)))
    assert len(view.picture.boxes) == 44


def open_resnet_block(view):
    stage = next(child for child in view.groups.children if child.label == "res2")
    view.open_group(stage.id)
    view.open_group(stage.children[0].id)
    assert len(view.picture.boxes) == 2


def nested_calls():
    """main loads tokens and calls an encoder block, which normalises them and calls an attention graph."""
    ir = popxl.Ir()
    rng = np.random.default_rng(1)
    with ir.main_graph:
        tokens = popxl.h2d_stream([8, 16], popxl.float32, name="tokens")
        weights = [popxl.variable(rng.normal(size=(16, 16)).astype(np.float32), name=f"attention.{name}")
                   for name in ("query", "key", "value")]

        def attention(x, query, key, value):
            scores = ops.softmax((x @ query) @ ops.transpose(x @ key, (1, 0)) * 0.25, axis=1)
            return scores @ (x @ value)

        attention_graph = ir.create_graph(attention, popxl.TensorSpec((8, 16), popxl.float32), *weights)

        def encoder_block(x, query, key, value):
            centred = x - ops.mean(x, axis=1, keepdims=True)
            (mixed,) = ops.call(attention_graph, centred, query, key, value)
            return ops.gelu(mixed) + x

        block = ir.create_graph(encoder_block, popxl.TensorSpec((8, 16), popxl.float32), *weights)
        (out,) = ops.call(block, ops.host_load(tokens), *weights)
        ops.host_store(popxl.d2h_stream(out.shape, out.dtype, name="encoded"), out)
    return ir, ir.main_graph


def expand_both_calls(view):
    outer = next(op for op in view.graph.ops if op.type == "call")
    inner = next(op for op in outer.called_graphs[0].ops if op.type == "call")
    view.expand(outer)
    view.expand(outer, inner)
    assert len(view.picture.boxes) == 2


def expand_forward_call(view):
    view.expand(next(op for op in view.graph.ops if op.type == "call" and op.called_graphs[0].name.endswith("forward")))


def transformer_forward():
    ir = transformer()[0]
    return ir, next(graph for graph in ir.graphs if graph.name.endswith("forward"))


def fit_630(view):
    view.fit(630)
    assert view.width == 630


def resnet_main():
    ir = resnet50_session()._workbench_source()
    return ir, ir.main_graph


def transformer_main():
    ir = transformer()[0]
    return ir, ir.main_graph


def wide():
    ir = wide_program()
    return ir, ir.main_graph


def open_first_groups(view):
    """Opens the first run of scopes, and in it the first scope."""
    run = view.groups.children[0]
    view.open_group(run.id)
    view.open_group(run.children[0].id)
    assert len(view.picture.boxes) == 2


def drawn(name: str) -> Pixels:
    """The picture ``name`` of ``PICTURES`` in pixels."""
    (ir, graph), detail, *opener = PICTURES[name]()
    op_by_op = name.startswith(("300", "ResNet-50 op", "transformer main graph,", "transformer main graph in",
                                "transformer forward graph in"))  # their ops, not the groups they open as
    view = GraphView(ir, graph=graph, detail=detail, grouped=False if op_by_op else "auto", live=False)
    for opens in opener:
        opens(view)
    if name.startswith("300"):
        assert 290 <= len(graph.ops) <= 320
    return Pixels(view.figure, view.width)
