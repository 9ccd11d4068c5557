"""The JSON schema in workbench/export/ir.schema.json is the one definition of a document: every export of
the Python side matches it, every malformed case the extension refuses breaks it (or, for what JSON Schema
cannot say, a reference check the extension adds), and the extension draws every real export.

The malformed cases (extensions/ipu-workbench/test/malformed.json) are edits of the extension's sample
document; the extension's own tests check the message each one shows.
"""
import copy
import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import fastjsonschema
import numpy as np
import popxl
import popxl.ops as ops
import pytest

from support.programs import export_program as build_program
from support.programs import call_tree_program, mlp_training
from workbench.export.mime import MIME_TYPE

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "extensions" / "ipu-workbench"
SCHEMA = json.loads((REPO / "workbench" / "export" / "ir.schema.json").read_text(encoding="utf-8"))
SAMPLE = json.loads((EXTENSION / "test" / "sample.ir.json").read_text(encoding="utf-8"))
MALFORMED = json.loads((EXTENSION / "test" / "malformed.json").read_text(encoding="utf-8"))
validate = fastjsonschema.compile(SCHEMA)


def schema_errors(document) -> str:
    """Why ``document`` breaks the schema, or "" when it matches."""
    try:
        validate(document)
    except fastjsonschema.JsonSchemaValueException as error:
        return error.message
    return ""


def malformed_document(case: dict):
    """The sample with the case's one edit, as the extension's tests make it (text cases are parsed)."""
    if "text" in case:
        return json.loads(case["text"])
    path = case["set"]["path"] if "set" in case else case["delete"]
    if not path:
        return copy.deepcopy(case["set"]["value"])
    document = copy.deepcopy(SAMPLE)
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if "set" in case:
        parent[path[-1]] = copy.deepcopy(case["set"]["value"])
    else:
        del parent[path[-1]]
    return document


def remote_and_grouped_program() -> popxl.Ir:
    """Two IPUs with a copy between them, a replica-grouped variable, a remote buffer and in_sequence."""
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        popxl.variable(np.zeros((2, 2), np.float32), name="grouped",
                       replica_grouping=ir.replica_grouping(stride=2, group_size=2), retrieval_mode="all_replicas")
        buffer = popxl.remote_buffer((3, 2), popxl.float16, entries=4)
        with popxl.in_sequence():
            loaded = ops.remote_load(buffer, 1)
            ops.remote_store(buffer, 2, loaded + loaded)
        with popxl.ipu(0):
            x = ops.host_load(popxl.h2d_stream([3], popxl.float32, name="x"))
        with popxl.ipu(1):
            ops.host_store(popxl.d2h_stream([3], popxl.float32, name="y"), ops.ipu_copy(x, 1) * 2)
    return ir


def session_document() -> dict:
    ir, inputs = mlp_training(replicas=2, layers=2, width=8, batch=2, steps=2)
    with popxl.Session(ir, "ipu_model") as session:
        return session._repr_mimebundle_()[0][MIME_TYPE]


@functools.cache
def exports() -> dict[str, dict]:
    """Real exports of programs using every part of the schema."""
    programs = {"call, repeat and conditional": build_program()[0], "call tree": call_tree_program()[0],
                "mlp training": mlp_training()[0], "remote buffers, groups, two ipus": remote_and_grouped_program()}
    documents = {name: ir._repr_mimebundle_()[0][MIME_TYPE] for name, ir in programs.items()}
    documents["a subgraph"] = build_program()[1]["twice"]._repr_mimebundle_()[0][MIME_TYPE]
    documents["a session"] = session_document()
    return documents


def test_the_sample_of_the_extension_tests_matches_the_schema():
    assert schema_errors(SAMPLE) == ""


@pytest.mark.parametrize("name", sorted(exports()))
def test_every_export_matches_the_schema(name):
    assert schema_errors(exports()[name]) == ""


def test_there_are_at_least_31_malformed_cases_of_each_kind_the_extension_tells_apart():
    assert len(MALFORMED) >= 31
    assert {case["caught_by"] for case in MALFORMED} == {"json", "schema", "references"}


@pytest.mark.parametrize("case", MALFORMED, ids=[case["name"] for case in MALFORMED])
def test_a_malformed_case_is_refused_by_the_schema_unless_only_references_are_wrong(case):
    if case["caught_by"] == "json":
        with pytest.raises(json.JSONDecodeError):
            malformed_document(case)
        return
    document = malformed_document(case)
    if case["caught_by"] == "schema":
        with pytest.raises(fastjsonschema.JsonSchemaValueException):
            validate(document)
    else:
        assert schema_errors(document) == ""  # JSON Schema cannot say that an id names something; the extension does


def run_node_tests(env: dict, *files: str) -> str:
    node = shutil.which("node")
    assert node, "Node.js is needed to run the extension's view tests"
    missing = [p for p in ("lib/view.js", "node_modules/jsdom") if not (EXTENSION / p).exists()]
    if missing:
        pytest.fail(f"{', '.join(missing)} missing: run `npm install && npm run build` in {EXTENSION}")
    result = subprocess.run([node, "--test", *files], cwd=EXTENSION, env=dict(os.environ, **env),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^# fail 0$", result.stdout, re.M)
    return result.stdout


def test_the_extension_shows_each_malformed_case_as_an_error_message():
    out = run_node_tests({}, "test/malformed.test.mjs", "test/extension.test.mjs")
    assert re.search(r"^ok \d+ - the renderer resolves with an error message for every malformed document$", out, re.M)
    for case in MALFORMED:
        assert re.search(rf"^ok \d+ - malformed: {re.escape(case['name'])}$", out, re.M), case["name"]


def test_the_extension_draws_every_export(tmp_path):
    paths = []
    for number, document in enumerate(exports().values()):
        path = tmp_path / f"export{number}.ir.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        paths.append(str(path))
    out = run_node_tests({"IPU_WB_DOCUMENTS": os.pathsep.join(paths)}, "test/views.test.mjs")
    for path in paths:
        assert f"exported document {path} renders as inert text" in out


def test_the_extension_draws_a_million_step_export_and_refuses_a_broken_one():
    out = run_node_tests({}, "test/large.test.mjs")
    for name in ("a million-step export is drawn with its peak, in a bounded number of columns",
                 "a million-step export with one series entry missing at the end is refused with a message",
                 "a chain of 120,000 ops is laid out one layer per op"):
        assert re.search(rf"^ok \d+ - {re.escape(name)}$", out, re.M), name
