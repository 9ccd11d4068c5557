"""The executable cache: with engine caching on, a second Session of the same program on ``ipu_hw`` loads
the executable the first one saved (one ``<hash>.popef`` file in the cache folder), and logs as PopART does."""
import logging

import numpy as np
import pytest

import popart
import popxl
import popxl.ops as ops


def _ir(size: int = 2, engine_options: dict = None):
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.full((size, size), 3.0, np.float32), name="w")
        out = popxl.variable(np.zeros((size, size), np.float32), name="out")
        ops.var_updates.copy_var_update_(out, w @ w)
    if engine_options:
        ir._pb_ir.getSessionOptions().engineOptions = engine_options
    return ir, out


def _session_log(ir, out, capfd) -> tuple[np.ndarray, str]:
    with popxl.Session(ir, "ipu_hw") as session:
        session.run()
        value = session.get_tensor_data(out)
    return value, capfd.readouterr().err


@pytest.fixture
def debug_log():
    logger = logging.getLogger("popart")
    level = logger.level
    popart.getLogger().setLevel("DEBUG")
    yield
    logger.setLevel(level)


def test_the_second_session_loads_what_the_first_saved(tmp_path, monkeypatch, capfd, debug_log):
    monkeypatch.setenv("POPXL_CACHE_DIR", str(tmp_path))
    first, log = _session_log(*_ir(), capfd)
    assert "Starting compilation" in log and "Loading serialized PopART executable" not in log
    saved = list(tmp_path.glob("*.popef"))
    assert len(saved) == 1 and saved[0].stem.isdigit()
    second, log = _session_log(*_ir(), capfd)
    assert "Starting compilation" not in log
    assert f"Loading serialized PopART executable from {saved[0]}" in log
    assert f"PopEF file inferred to have hash '{saved[0].stem}' has been found: {saved[0]}" in log
    np.testing.assert_array_equal(first, np.full((2, 2), 18.0, np.float32))
    np.testing.assert_array_equal(second, first)


def test_another_program_or_engine_options_miss(tmp_path, monkeypatch, capfd, debug_log):
    monkeypatch.setenv("POPXL_CACHE_DIR", str(tmp_path))
    _session_log(*_ir(2), capfd)
    _, log = _session_log(*_ir(3), capfd)
    assert "Starting compilation" in log
    _, log = _session_log(*_ir(2, {"opt.enableInlining": "false"}), capfd)
    assert "Starting compilation" in log
    assert len(list(tmp_path.glob("*.popef"))) == 3


def test_a_file_for_another_hash_or_no_executable_is_ignored(tmp_path, monkeypatch, capfd, debug_log):
    monkeypatch.setenv("POPXL_CACHE_DIR", str(tmp_path))
    _session_log(*_ir(2), capfd)
    (small,) = tmp_path.glob("*.popef")
    _session_log(*_ir(3), capfd)
    (large,) = set(tmp_path.glob("*.popef")) - {small}
    small.write_bytes(large.read_bytes())
    (tmp_path / "notes.popef").write_text("not an executable")
    _, log = _session_log(*_ir(2), capfd)
    assert "Cache file hash did not match the IR hash" in log
    assert f"Ignoring cache file because it does not contain a valid PopART executable : {tmp_path / 'notes.popef'}" \
        in log
    assert "Starting compilation" in log


def test_no_cache_on_the_ipu_model_or_without_the_option(tmp_path, monkeypatch, capfd, debug_log):
    monkeypatch.setenv("POPXL_CACHE_DIR", str(tmp_path))
    ir, _ = _ir()
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
    monkeypatch.delenv("POPXL_CACHE_DIR")
    ir, _ = _ir()
    with popxl.Session(ir, "ipu_hw") as session:
        session.run()
    assert list(tmp_path.iterdir()) == []


def test_the_session_options_turn_it_on(tmp_path, capfd, debug_log):
    for _ in range(2):
        ir, out = _ir()
        options = ir._pb_ir.getSessionOptions()
        options.enableEngineCaching, options.cachePath = True, str(tmp_path / "cache")
        _, log = _session_log(ir, out, capfd)
    assert "Loading serialized PopART executable" in log
    assert len(list((tmp_path / "cache").glob("*.popef"))) == 1


def test_only_popxl_sessions_use_the_cache(tmp_path, monkeypatch):
    from workbench.runtime.session import Session

    monkeypatch.setenv("POPXL_CACHE_DIR", str(tmp_path))
    ir, _ = _ir()
    with Session(ir, "ipu_hw") as session:  # the runtime's own session, as PopART's sessions make it
        session.run()
    assert list(tmp_path.iterdir()) == []
