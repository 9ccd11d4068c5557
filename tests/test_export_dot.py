"""Exports of the IR as pictures: Graphviz DOT text and numbered dot_checkpoint files."""
import re
import shutil
import subprocess

import pytest

from support.programs import export_program as build_program
from workbench.export import to_dot, to_networkx, write_dot_checkpoint

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|->|[{}\[\];=,]|[A-Za-z_][A-Za-z_0-9]*|-?[0-9.]+|\s+')
_KEYWORDS = {"graph", "node", "edge", "subgraph", "digraph"}


def dot_structure(text: str) -> tuple[list[str], list[tuple[str, str]], int]:
    """Check DOT text token by token; return node ids, edges and the number of clusters."""
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        assert match, f"unexpected DOT text at {text[position:position + 30]!r}"
        if not match.group().isspace():
            tokens.append(match.group())
        position = match.end()
    depth, statement, nodes, edges, clusters = 0, [], [], [], 0
    for token in tokens:
        if token in "{};":
            if len(statement) >= 3 and statement[1] == "->":
                edges.append((statement[0], statement[2]))
            elif len(statement) >= 2 and statement[1] == "[" and statement[0] not in _KEYWORDS:
                nodes.append(statement[0])
            elif statement[:1] == ["subgraph"] and statement[1].startswith('"cluster'):
                clusters += 1
            depth += {"{": 1, "}": -1, ";": 0}[token]
            assert depth >= 0, "a closing brace with no opening one"
            statement = []
        else:
            statement.append(token)
    assert depth == 0 and not statement, "unbalanced braces or a trailing statement"
    assert len(set(nodes)) == len(nodes), "a node is declared twice"
    undeclared = {end for edge in edges for end in edge} - set(nodes)
    assert not undeclared, f"edges to undeclared nodes: {undeclared}"
    return nodes, edges, clusters


def test_dot_of_an_ir_draws_each_graph_as_a_cluster():
    ir, _ = build_program()
    text = to_dot(ir)
    nodes, edges, clusters = dot_structure(text)
    data = to_networkx(ir)
    assert clusters == len(ir.graphs)
    assert len(nodes) == data.number_of_nodes() and len(edges) == data.number_of_edges()
    assert 'label="repeat x3"' in text and 'label="then"' in text and 'label="else"' in text


def test_dot_styles_ops_variables_and_constants_apart():
    ir, _ = build_program()
    lines = to_dot(ir).splitlines()

    def line_of(node_id):
        return next(line for line in lines if line.strip().startswith(f'"{node_id}" ['))

    assert 'fillcolor="#cfe2ff"' in line_of("main_graph:tensor:w")
    assert 'style="filled,dashed"' in line_of("main_graph:tensor:flag")
    assert 'label="x\\nfloat32[2]"' in line_of("main_graph:tensor:x")
    add_op = next(op for op in ir.main_graph.ops if op.type == "add")
    assert f'label="add\\n{add_op.name}"' in line_of(f"main_graph:op:{add_op.name}")
    assert "shape" not in line_of(f"main_graph:op:{add_op.name}")  # the default: box
    assert '  node [fontname="Helvetica", fontsize=11, shape=box];' in lines


def test_dot_escapes_quotes_backslashes_and_angle_brackets():
    ir, _ = build_program()
    text = to_dot(ir)
    dot_structure(text)
    assert '"main_graph:tensor:c\\"<q>{\\\\" [' in text
    assert 'label="c\\"<q>{\\\\\\nfloat32[2]"' in text


def test_dot_of_one_graph_shows_the_graphs_it_calls_outside_its_cluster():
    ir, parts = build_program()
    text = to_dot(ir.main_graph)
    nodes, _, clusters = dot_structure(text)
    assert clusters == 1
    assert any(line.startswith('  "graph:double" [') for line in text.splitlines())
    assert not any(node.startswith(f'"{parts["twice"].id}:') for node in nodes)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_graphviz_accepts_the_dot_text(tmp_path):
    ir, _ = build_program()
    result = subprocess.run(["dot", "-Tsvg"], input=to_dot(ir), capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0 and result.stderr == ""
    assert "c&quot;&lt;q&gt;{\\" in result.stdout


def test_pydot_parses_the_dot_text():
    pydot = pytest.importorskip("pydot")
    ir, _ = build_program()
    (parsed,) = pydot.graph_from_dot_data(to_dot(ir))
    assert len(parsed.get_subgraphs()) == len(ir.graphs)


# ----- checkpoints -----
def test_dot_checkpoints_are_numbered_and_keep_the_first_save_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("POPART_DOT_CHECKS", raising=False)
    monkeypatch.chdir(tmp_path)
    ir, _ = build_program()
    ir.dot_checkpoint("FWD0", save_dir=tmp_path / "dots")
    ir.dot_checkpoint("FWD0")
    ir.dot_checkpoint("FINAL")
    names = sorted(p.name for p in (tmp_path / "dots").iterdir())
    assert names == ["000_FWD0.dot", "001_FWD0.dot", "002_FINAL.dot"]
    assert not list(tmp_path.glob("*.dot"))
    assert (tmp_path / "dots" / "002_FINAL.dot").read_text(encoding="utf-8") == to_dot(ir)


def test_dot_checkpoints_go_to_the_working_directory_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("POPART_DOT_CHECKS", raising=False)
    monkeypatch.chdir(tmp_path)
    ir, _ = build_program()
    ir.dot_checkpoint("start/here")
    assert [p.name for p in tmp_path.iterdir()] == ["000_start_here.dot"]


def test_each_ir_counts_its_own_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("POPART_DOT_CHECKS", "ALL")
    first, _ = build_program()
    second, _ = build_program()
    assert write_dot_checkpoint(first, "A", tmp_path / "one") == tmp_path / "one" / "000_A.dot"
    assert write_dot_checkpoint(second, "A", tmp_path / "two") == tmp_path / "two" / "000_A.dot"
    assert write_dot_checkpoint(first, "B", tmp_path / "one") == tmp_path / "one" / "001_B.dot"


@pytest.mark.parametrize("setting", ["FWD0:FINAL", "FWD0, FINAL"])
def test_popart_dot_checks_selects_the_checks_written(tmp_path, monkeypatch, setting):
    monkeypatch.setenv("POPART_DOT_CHECKS", setting)
    ir, _ = build_program()
    for check in ("FWD0", "BWD0", "FINAL"):
        ir.dot_checkpoint(check, save_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["000_FWD0.dot", "001_FINAL.dot"]


def test_popart_dot_checks_all_writes_every_check(tmp_path, monkeypatch):
    monkeypatch.setenv("POPART_DOT_CHECKS", "ALL")
    ir, _ = build_program()
    ir.dot_checkpoint("anything", save_dir=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["000_anything.dot"]


def test_dot_checkpoint_needs_a_check_name(tmp_path):
    ir, _ = build_program()
    with pytest.raises(ValueError, match="check name"):
        ir.dot_checkpoint("", save_dir=tmp_path)
    assert not list(tmp_path.iterdir())
