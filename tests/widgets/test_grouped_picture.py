"""The grouped pictures shipped in the JSON export: real models open as a few labelled groups (ResNet-50 by
its blocks, a transformer by IPU and name scope, 10,000 ops as runs), op boxes say what Netron says, and
every group's picture is laid out without overlaps, with edges from box to box, inside its size."""
import json
from pathlib import Path

import fastjsonschema
import networkx as nx
import numpy as np
import pytest

import popxl
import popxl.ops as ops
from real_programs import long_chain, resnet50_session, transformer, wide_program
from workbench.export import to_json
from support.scene_geometry import check_scene
from workbench.export.compose import FOLD_WIDTH, compose
from workbench.export.group_layout import GroupPictures, grouped_section
from workbench.export.grouping import MAX_ITEMS, group_graph
from workbench.export.node_content import op_lines

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "workbench/export/ir.schema.json").read_text())


@pytest.fixture(scope="module")
def resnet():
    return resnet50_session()._workbench_source()


def labels(group):
    return [child.label for child in group.children]


def test_resnet50_opens_as_its_stages_and_each_stage_as_its_blocks(resnet):
    root = group_graph(resnet.main_graph)
    assert labels(root) == ["res_conv1", "res2", "res3", "res4", "res5", "pred"]
    res2 = root.children[1]
    assert labels(res2) == ["res2_0", "res2_1", "res2_2"]
    assert labels(res2.children[0]) == ["res2_0_branch2a", "res2_0_branch2b", "res2_0_branch2c", "res2_0_branch1"]
    assert root.count == len(resnet.main_graph.ops) == 181
    assert [op.type for op in root.ops] == ["init", "host_load", "conv", "host_store"]


def test_an_op_box_says_its_type_its_distinguishing_attribute_and_its_folded_weights(resnet):
    first_conv = next(op for op in resnet.main_graph.ops if op.type == "conv")
    assert op_lines(first_conv) == ["conv 7×7 /2", "gpu_0/conv1_w_0 ⟨64×3×7×7⟩"]
    norm = next(op for op in resnet.main_graph.ops if op.type == "batch_norm_inference")
    assert op_lines(norm) == ["batch_norm_inference", "gpu_0/res_conv1_bn_s_0 ⟨64⟩", "gpu_0/res_conv1_bn_b_0 ⟨64⟩",
                              "gpu_0/res_conv1_bn_rm_0 ⟨64⟩", "+1 more"]
    pool = next(op for op in resnet.main_graph.ops if op.type == "max_pool")
    assert op_lines(pool) == ["max_pool 3×3 /2"]


def test_popxl_name_scopes_and_ipus_group_a_pipelined_transformer():
    ir, _ = transformer(layers=4)
    forward = next(g for g in ir.graphs if g.name.endswith("forward") and not g.name.endswith("_grad"))
    root = group_graph(forward)
    assert labels(root) == ["IPU 0", "IPU 1"]
    on_second = root.children[1]
    assert [label for label in labels(on_second) if label.startswith("layer")] == ["layer2", "layer3"]
    layer = on_second.children[0]
    assert labels(layer) == ["attention", "feed_forward"]
    softmax = next(op for group in layer.walk() for op in group.ops if op.type == "softmax")
    assert op_lines(softmax) == ["softmax axis=2"]
    (call,) = [op for op in ir.main_graph.ops if op.type == "call" and op.called_graphs[0] is forward]
    assert op_lines(call) == [f"call {forward.label}", "16 weights passed in"]


@pytest.mark.parametrize("make, size", [(long_chain, 2102), (wide_program, 10_003)])
def test_a_large_graph_opens_as_a_few_boxes_and_no_group_holds_more_than_max_items(make, size):
    ir = make()
    root = group_graph(ir.main_graph)
    groups = list(root.walk())
    assert root.count == size and len(root.children) + len(root.ops) <= 8
    assert all(len(group.children) + len(group.ops) <= MAX_ITEMS for group in groups)
    members = [op for group in groups for op in group.ops]
    assert len(members) == len(set(members)) == size  # every op in exactly one group


def check_layout(picture):
    """Edges between known boxes, downwards unless the groups feed each other both ways; ports on the
    first and last layers."""
    nodes = picture["nodes"]
    acyclic = nx.is_directed_acyclic_graph(nx.DiGraph([(e["from"], e["to"]) for e in picture["edges"]]))
    for edge in picture["edges"]:
        assert -1 <= edge["from"] < len(nodes) and -1 <= edge["to"] < len(nodes)
        if edge["from"] >= 0 and edge["to"] >= 0:
            assert nodes[edge["to"]]["layer"] > nodes[edge["from"]]["layer"] or not acyclic, picture["id"]
        layers = [layer for _, layer in edge["bends"]]
        assert layers == sorted(layers) or not acyclic
    for port in picture["ports"]:
        assert port["layer"] == (0 if port["side"] == "in" else picture["depth"] - 1) or not acyclic


def test_every_group_picture_of_real_programs_is_laid_out_without_overlaps(resnet):
    programs = [resnet, transformer()[0], long_chain(), wide_program()]
    for ir in programs:
        section = grouped_section(ir)
        for graph in section["graphs"]:
            ids = {picture["id"] for picture in graph["groups"]}
            pictures = {picture["id"]: picture for picture in graph["groups"]}
            for picture in graph["groups"]:
                check_layout(picture)
                check_scene(compose(pictures.__getitem__, picture["id"]))  # every child collapsed
                children = {node["key"] for node in picture["nodes"] if node["kind"] == "group"}
                check_scene(compose(pictures.__getitem__, picture["id"], children))  # all expanded in place
                assert picture["parent"] is None or picture["parent"] in ids
                assert all(node["key"] in ids for node in picture["nodes"] if node["kind"] == "group")


def test_the_grouped_section_is_part_of_a_valid_export(resnet):
    document = to_json(resnet)
    fastjsonschema.compile(SCHEMA)(document)
    assert "grouped" not in to_json(resnet, grouped=False)
    (graph,) = document["grouped"]["graphs"]
    root = graph["groups"][0]
    assert graph["root"] == root["id"] == "main_graph" and root["ops"] == 181
    edge = next(e for e in root["edges"] if root["nodes"][e["from"]]["lines"][0].startswith("host_load"))
    assert edge["label"] == "gpu_0/data_0: float32[1,3,224,224]"


def test_ops_without_scopes_or_weights_join_the_scope_of_their_input():
    ir = popxl.Ir()
    with ir.main_graph, popxl.name_scope("outer"):
        x = popxl.variable(np.ones((2, 2), np.float32), name="x")
        y = ops.relu(x @ x)
    root = group_graph(ir.main_graph)
    assert labels(root) == [] and [op.type for op in root.ops] == ["matmul", "relu"]  # one scope: opened in place
    assert y.name.startswith("outer/")


def test_a_long_run_of_groups_expanded_folds_into_bands_that_use_the_figures_width():
    """The 10,003-op program with its first group (24 groups one after the other) and that group's first
    (a block) expanded: a single column 467 px wide and 2,820 px tall unless folded."""
    groups = GroupPictures(wide_program().main_graph)
    root = groups.picture(groups.root.id)
    first = next(node["key"] for node in root["nodes"] if node["kind"] == "group")
    block = next(node["key"] for node in groups.picture(first)["nodes"] if node["kind"] == "group")
    scene = compose(groups.picture, groups.root.id, {first, block})
    check_scene(scene)
    assert 0.8 * FOLD_WIDTH <= scene.width <= FOLD_WIDTH and scene.height < 2 * FOLD_WIDTH, (scene.width, scene.height)
    frame = next(box for box in scene.boxes if box["key"] == first)
    inside = [box for box in scene.boxes if box["kind"] == "group" and not box["expanded"]
              and frame["y"] < box["y"] < frame["y"] + frame["h"]]
    columns = {round(box["x"] - box["w"] / 2) for box in inside}
    assert max(columns) - min(columns) > frame["w"] / 3  # side by side, not one column


def test_runs_of_sibling_scopes_are_named_by_their_scopes_the_ops_around_them_left_apart():
    root = group_graph(wide_program().main_graph)
    assert labels(root) == ["block0 … block19", "block20 … block39", "block40 … block59", "block60 … block79",
                            "block80 … block99"]
    assert [op.type for op in root.ops] == ["init", "host_load", "host_store"]
    assert labels(root.children[0])[:3] == ["block0", "block1", "block2"]
    assert all(child.kind == "scope" for run in root.children for child in run.children)


def test_a_scope_of_repeated_units_keeps_its_name_and_says_how_many():
    """The transformer's optimizer scope (48 ops beside five loose ops: for each of 24 weights an all-reduce and
    the update it feeds) is one box named ``optimizer`` that says ``24 × replicated_all_reduce → accumulate_``,
    holding a unit per weight, named by it, 8 to a run, instead of two runs named by their first and last op."""
    ir, _ = transformer()
    root = group_graph(ir.main_graph)
    assert labels(root) == ["optimizer"] and root.children[0].count == 48
    optimizer = root.children[0]
    assert optimizer.kind == "scope" and optimizer.repeat == "24 × replicated_all_reduce → accumulate_"
    assert labels(optimizer) == ["layer0.qkv … layer1.ff2", "layer2.qkv … layer3.ff2", "layer4.qkv … layer5.ff2"]
    units = [unit for run in optimizer.children for unit in run.children]
    assert [unit.kind for unit in units] == ["unit"] * 24
    assert [unit.label for unit in units][:5] == ["layer0.qkv", "layer0.proj", "layer0.ff1", "layer0.ff2", "layer1.qkv"]
    assert all([op.type for op in unit.ops] == ["replicated_all_reduce", "accumulate_"] for unit in units)
    pictures = GroupPictures(ir.main_graph)
    boxes = {node["key"]: node for node in pictures.picture(root.id)["nodes"]}
    assert boxes[optimizer.id]["lines"] == ["▸ optimizer", "48 ops: 24 × replicated_all_reduce → accumulate_"]
    inner = pictures.picture(optimizer.children[0].id)["nodes"]
    assert inner[0]["lines"] == ["▸ layer0.qkv", "2 ops: replicated_all_reduce → accumulate_"]


def test_only_units_that_read_nothing_of_each_other_fold_and_only_where_a_group_is_too_wide():
    """A chain of 30 relus repeats one type but each reads the last: runs of ops, not a repeat. 30 independent
    relu → exp pairs outside any scope fold into one "repeat" group of units; 6 of them, few enough to draw, do not."""
    chained = popxl.Ir()
    with chained.main_graph:
        x = popxl.variable(np.ones(2, np.float32), name="x")
        for _ in range(30):
            x = ops.relu(x)
    assert {group.kind for group in group_graph(chained.main_graph).walk()} == {"graph", "range"}

    def pairs(count):
        ir = popxl.Ir()
        with ir.main_graph:
            for number in range(count):
                ops.exp(ops.relu(popxl.variable(np.ones(2, np.float32), name=f"w{number}")))
        return group_graph(ir.main_graph)

    (fold,) = pairs(30).children
    assert fold.kind == "repeat" and fold.label == "30 × relu → exp" and fold.count == 60
    assert labels(fold) == ["w0 … w7", "w8 … w15", "w16 … w23", "w24 … w29"]  # 8 units to a run
    assert labels(fold.children[0])[:2] == ["w0", "w1"] and fold.children[0].children[0].kind == "unit"
    assert pairs(6).children == []


def test_a_scope_a_little_over_the_limit_splits_into_runs_of_even_length():
    ir, _ = transformer()
    backward = next(g for g in ir.graphs if g.name.endswith("forward_grad"))
    root = group_graph(backward)
    scope = next(group for group in root.walk() if group.label == "feed_forward" and group.count == 26)
    assert [child.count for child in scope.children] == [13, 13]
    assert all(child.kind == "range" for child in scope.children)


@pytest.mark.parametrize("room", [630, 1280])
def test_no_picture_is_wider_than_its_output_with_a_top_level_group_open(resnet, room):
    """Twelve all-reduces side by side (the transformer's optimizer) were 3,387 px wide: parts with no edge
    between them wrap into rows, and a picture's columns close up, so that opening any top-level group of a
    real program leaves it within the output, and a layer still too wide (ResNet-50's blocks, a frame beside
    a box) wraps into rows; so does a group open inside it."""
    transformer_ir, _ = transformer()
    for ir in (transformer_ir, resnet, wide_program()):
        for graph in ir.graphs:
            groups = GroupPictures(graph)
            root = groups.root
            assert compose(groups.picture, root.id, set(), room=room).width <= room
            for child in root.children:
                scene = compose(groups.picture, root.id, {child.id}, room=room)
                check_scene(scene)
                assert scene.width <= room, (graph.name, child.label, scene.width)
                for grandchild in child.children:
                    inner = compose(groups.picture, root.id, {child.id, grandchild.id}, room=room)
                    check_scene(inner)
                    assert inner.width <= room, (graph.name, grandchild.label, inner.width)


def test_parallel_parts_of_a_group_wrap_into_rows_fed_by_a_bus_of_edges():
    """The optimizer's first run: 8 units (an all-reduce → accumulate pair each), each reading a gradient from
    outside, one unit per row, their inputs brought down a bus right of them, eight pixels apart."""
    ir, _ = transformer()
    groups = GroupPictures(ir.main_graph)
    optimizer = next(child for child in groups.root.children if child.label == "optimizer")
    run = optimizer.children[0]
    picture = groups.picture(run.id)
    assert [node["layer"] for node in picture["nodes"]] == list(range(1, 9))
    assert {node["col"] for node in picture["nodes"]} == {0.0}
    scene = compose(groups.picture, run.id, set(), room=630)
    check_scene(scene)
    assert scene.width <= 630
    units = [box for box in scene.boxes if box["lines"][1].endswith("replicated_all_reduce → accumulate_")]
    assert len({box["x"] for box in units}) == 1 and len(units) == 8
    into = [edge for edge in scene.edges if edge["tail"] is None]
    assert len(into) == 8 and all(edge["arrow"] for edge in into)
    bus = sorted({round(x) for edge in into for x, _ in edge["points"][1:-1] if x > units[0]["x"] + units[0]["w"] / 2})
    assert max(bus) - min(bus) <= 8 * 8 and min(b - a for a, b in zip(bus, bus[1:])) >= 4, bus  # not 24 apart


def test_a_layer_wider_than_the_output_wraps_into_rows_its_edges_passing_beside_the_boxes(resnet):
    """ResNet-50's first block beside its shortcut (res2_0_branch2b and res2_0_branch1, 633 px side by side)
    in a 500-px room: the shortcut drops to a row of its own under the branch, and the edges into it and out of
    the branch run past the other box, not through it; in 1,280 px they stay side by side."""
    groups = GroupPictures(resnet.main_graph)
    block = groups.root.children[1].children[0]
    assert block.label == "res2_0"

    def boxes(room):
        scene = compose(groups.picture, block.id, set(), room=room)
        check_scene(scene)
        return scene, {box["lines"][0]: box for box in scene.boxes}

    narrow, by_label = boxes(500)
    branch, shortcut = by_label["▸ res2_0_branch2b"], by_label["▸ res2_0_branch1"]
    assert narrow.width <= 500 and shortcut["y"] >= branch["y"] + branch["h"]
    wide, by_label = boxes(1280)
    assert by_label["▸ res2_0_branch2b"]["y"] == by_label["▸ res2_0_branch1"]["y"] and wide.width > 500


def test_a_lone_scope_before_a_long_run_of_scopes_leaves_the_run_its_share_of_boxes():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(4, np.float32), name="x")
        with popxl.name_scope("lone"):
            ops.negate(ops.add(x, x))
        ops.mul(popxl.variable(np.ones(4, np.float32), name="y"), x)
        for n in range(40):
            with popxl.name_scope(f"block{n}"):
                ops.negate(ops.relu(popxl.variable(np.ones(4, np.float32), name=f"w{n}")))
    root = group_graph(ir.main_graph, max_items=8)
    assert [label for label in labels(root) if "…" in label] == [
        "block0 … block7", "block8 … block15", "block16 … block23", "block24 … block31", "block32 … block39"]
    assert all(len(group.children) + len(group.ops) <= 8 for group in root.walk())
