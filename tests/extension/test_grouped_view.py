"""The extension's grouped model view on a real model (ResNet-50 through PopART): it opens on the groups the
export laid out, draws them with arrowheads and a legend, opens a group on click and goes back by the
breadcrumb; an attribute nested 5,000 deep is previewed without overflowing the stack."""
import json
import re

from real_programs import resnet50_session
from test_documents import run_node_tests
from workbench.export.mime import MIME_TYPE


def test_the_extension_draws_and_opens_the_grouped_pictures_of_resnet50(tmp_path):
    ir = resnet50_session()._workbench_source()
    path = tmp_path / "resnet50.ir.json"
    path.write_text(json.dumps(ir._repr_mimebundle_()[0][MIME_TYPE]), encoding="utf-8")
    out = run_node_tests({"IPU_WB_GROUPED": str(path)}, "test/grouped.test.mjs")
    for name in ("a document with grouped pictures opens on them, drawn as laid out",
                 "clicking a group expands it in place, the breadcrumb reaches every level",
                 "pointing at an op shows its details",
                 "the picture is laid out for the width of its canvas, drawn smaller where a little wider, "
                 "and again on resize",
                 "the graph tab folds weights and constants into the boxes of the ops that read them",
                 "an attribute nested 5,000 deep shows as a short preview, with no stack overflow"):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), name


def test_the_page_composes_expanded_pictures_as_the_notebook_does(tmp_path):
    from dataclasses import asdict

    from real_programs import transformer, wide_program
    from workbench.export.compose import compose
    from workbench.export.group_layout import GroupPictures

    ir, _ = transformer(layers=2)
    wide = wide_program(blocks=24).main_graph  # long runs of groups: folded pictures
    sets = []  # one per Ir: group ids are unique within an Ir
    for graphs in ([resnet50_session()._workbench_source().main_graph], ir.graphs, [wide]):
        pictures, cases = {}, []
        for graph in graphs:
            groups = GroupPictures(graph)
            for group in groups.root.walk():
                pictures[group.id] = groups.picture(group.id)
            for group in groups.root.walk():
                expanded = set(_chain(groups, group.id)) | {child.id for child in group.children}
                for room in (None, 480):  # the default room, and a narrow one: layers wrap, columns close up
                    scene = compose(groups.picture, groups.root.id, expanded, **({"room": room} if room else {}))
                    cases.append({"group": groups.root.id, "expanded": sorted(expanded), "room": room,
                                  "scene": asdict(scene)})
        sets.append({"pictures": pictures, "cases": cases})
    assert sum(len(each["cases"]) for each in sets) >= 100
    assert any(box["expanded"] for each in sets for case in each["cases"] for box in case["scene"]["boxes"])
    widths = [case["scene"]["width"] for each in sets for case in each["cases"]]
    narrower = sum(narrow < default for default, narrow in zip(widths[::2], widths[1::2]))
    assert narrower >= 50  # cases whose layers wrap or columns close up in the narrow room
    folded = [case for case in sets[2]["cases"] if case["scene"]["width"] > 700 and case["room"] is None]
    assert folded and all(case["scene"]["width"] <= 920 for case in folded)
    path = tmp_path / "compose.json"
    path.write_text(json.dumps(sets), encoding="utf-8")
    out = run_node_tests({"IPU_WB_COMPOSE": str(path)}, "test/compose.test.mjs")
    assert re.search(r"^ok \d+ - the page composes every case as the Python side does$", out, re.M)


def _chain(groups, group_id):
    chain, at = [], groups.groups[group_id]
    while at is not None:
        chain.append(at.id)
        at = at.parent
    return chain
