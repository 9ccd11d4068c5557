"""Which DOT checkpoints write a file, as in popxl: the checks named by the Ir's ``dotChecks`` option and
``POPART_DOT_CHECKS`` (in any case), ``ALL`` for every one with the ``Final`` check a Session writes, and
every check when neither names any and the variable is unset; the files go to ``logDir``."""
import numpy as np
import pytest

import popxl
import popxl.ops as ops


def _build(ir):
    with ir.main_graph:
        x = popxl.variable(np.ones(3, np.float32), name="x")
        y = x + 1
        ir.dot_checkpoint("Forward")
        ops.var_updates.copy_var_update_(x, y * 2)
        ir.dot_checkpoint("Update")
    popxl.Session(ir, "ipu_model")


def _files(folder):
    return sorted(p.name for p in folder.glob("*.dot"))


@pytest.mark.parametrize("checks, written", [
    ({"forward"}, ["000_Forward.dot"]),
    ({"FINAL"}, ["000_Final.dot"]),
    ({"UPDATE", "final"}, ["000_Update.dot", "001_Final.dot"]),
    ({"ALL"}, ["000_Forward.dot", "001_Update.dot", "002_Final.dot"]),
    ({""}, []),
])
def test_the_dot_checks_option_selects_the_files(tmp_path, monkeypatch, checks, written):
    monkeypatch.delenv("POPART_DOT_CHECKS", raising=False)
    ir = popxl.Ir()
    options = ir._pb_ir.getSessionOptions()
    options.dotChecks, options.logDir = checks, str(tmp_path)
    _build(ir)
    assert _files(tmp_path) == written


def test_the_environment_adds_checks_and_an_empty_one_turns_off_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("POPART_DOT_CHECKS", "update:Final")
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().logDir = str(tmp_path / "a")
    _build(ir)
    assert _files(tmp_path / "a") == ["000_Update.dot", "001_Final.dot"]
    monkeypatch.setenv("POPART_DOT_CHECKS", "")
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().logDir = str(tmp_path / "b")
    _build(ir)
    assert _files(tmp_path / "b") == []


def test_with_nothing_named_a_checkpoint_enables_every_check(tmp_path, monkeypatch):
    monkeypatch.delenv("POPART_DOT_CHECKS", raising=False)
    monkeypatch.chdir(tmp_path)
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.variable(np.ones(3, np.float32)) + 1
        ir.dot_checkpoint("Only", save_dir=tmp_path / "dots")
    popxl.Session(ir, "ipu_model")
    assert _files(tmp_path / "dots") == ["000_Only.dot", "001_Final.dot"]


def test_a_session_writes_nothing_when_no_check_is_enabled(tmp_path, monkeypatch):
    monkeypatch.delenv("POPART_DOT_CHECKS", raising=False)
    monkeypatch.chdir(tmp_path)
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.variable(np.ones(3, np.float32)) + 1
    popxl.Session(ir, "ipu_model")
    assert list(tmp_path.iterdir()) == []
