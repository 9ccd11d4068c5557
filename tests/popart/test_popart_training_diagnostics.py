"""A training session's diagnostics: DOT files per check (options and POPART_DOT_CHECKS), the JSON dump
of POPART_IR_DUMP, the summary report, cycle count and logging of a training run."""
import json
import logging

import pytest

import popart
from popart_training_oracle import data, mlp


def training_session(opts=None):
    model = mlp()
    builder = popart.Builder(model.proto)
    loss = builder.aiGraphcore.nllloss([model.probs, model.label])
    training = popart.TrainingSession(builder.getModelProto(), popart.DataFlow(2, []), loss, popart.ConstSGD(0.1),
                                      popart.DeviceManager().createIpuModelDevice({}), userOptions=opts)
    return training, model


def test_dot_checks_write_one_file_per_check(tmp_path):
    opts = popart.SessionOptions()
    opts.dotChecks = {popart.DotCheck.Fwd0, popart.DotCheck.Bwd0, popart.DotCheck.Final}
    opts.logDir = str(tmp_path)
    training_session(opts)
    files = sorted(p.name for p in tmp_path.glob("*.dot"))
    assert files == ["000_FWD0.dot", "001_BWD0.dot", "002_FINAL.dot"]
    forward, backward, final = [(tmp_path / f).read_text() for f in files]
    assert "matmul" in forward and "forward_grad" not in forward
    assert len(backward) > len(forward) and final.startswith("digraph")


def test_popart_dot_checks_environment_and_unknown_checks(tmp_path, monkeypatch):
    opts = popart.SessionOptions()
    opts.logDir = str(tmp_path)
    monkeypatch.setenv("POPART_DOT_CHECKS", "ALL")
    training_session(opts)
    assert len(list(tmp_path.glob("*.dot"))) == 5
    monkeypatch.setenv("POPART_DOT_CHECKS", "FWD7")
    with pytest.raises(popart.popart_exception, match="unknown DOT check"):
        training_session(opts)


def test_popart_ir_dump_writes_the_workbench_json(tmp_path, monkeypatch):
    target = tmp_path / "ir.json"
    monkeypatch.setenv("POPART_IR_DUMP", str(target))
    training_session()
    dumped = json.loads(target.read_text())
    assert {"forward", "forward_grad", "step"} <= {g["name"] for g in dumped["graphs"]}


def test_summary_report_and_cycles_of_a_training_run():
    opts = popart.SessionOptions()
    opts.engineOptions = {"debug.instrument": "true"}
    opts.instrumentWithHardwareCycleCounter = True  # for getCycleCount, as PopART needs
    training, model = training_session(opts)
    training.prepareDevice()
    training.weightsFromHost()
    xs, labels = data(model, 2)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, {}))
    assert training.getCycleCount() > 0
    report = training.getSummaryReport()
    assert "Last run:" in report and "IPU 0: peak" in report


def test_the_session_logs_its_lowering(caplog):
    popart.getLogger().setLevel("INFO")
    logger = logging.getLogger("popart")
    logger.addHandler(caplog.handler)
    try:
        training_session()
    finally:
        logger.removeHandler(caplog.handler)
        popart.getLogger().setLevel("OFF")
    assert any("training" in r.getMessage() and "ops" in r.getMessage() for r in caplog.records)


def test_first_and_final_dot_op_bound_the_ops_each_graph_shows(tmp_path):
    opts = popart.SessionOptions()
    opts.dotChecks = {popart.DotCheck.Final}
    opts.logDir = str(tmp_path / "all")
    training_session(opts)
    opts.logDir = str(tmp_path / "some")
    opts.firstDotOp, opts.finalDotOp = 1, 3
    training_session(opts)
    whole, part = [(tmp_path / d / "000_FINAL.dot").read_text() for d in ("all", "some")]
    ops_in = [sum(1 for line in text.splitlines() if ":op:" in line and "->" not in line) for text in (whole, part)]
    assert 0 < ops_in[1] < ops_in[0]
    assert ops_in[1] <= 2 * len(training_session(opts)[0].ir.graphs)  # at most two ops of each graph


def test_popart_log_config_sets_the_level_of_each_module(tmp_path):
    import subprocess
    import sys

    config = tmp_path / "conf.py"
    config.write_text('{"devicex": "INFO", "session": "DEBUG"}')
    probe = ("import logging, popart; print(logging.getLogger('popart.devicex').level, "
             "logging.getLogger('popart.session').level, logging.getLogger('popart').level)")
    env = {"POPART_LOG_CONFIG": str(config), "POPART_LOG_LEVEL": "WARN", "PATH": "", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.split() == [str(logging.INFO), str(logging.DEBUG), str(logging.WARNING)], done.stderr


def test_a_log_config_that_cannot_be_used_is_named(tmp_path):
    from workbench.popart.logging_ import module_levels

    bad = tmp_path / "conf.py"
    bad.write_text('{"devicex": "LOUD"}')
    with pytest.raises(ValueError, match="module 'devicex' has level 'LOUD'; expected one of TRACE"):
        module_levels(str(bad))
    with pytest.raises(ValueError, match="cannot be read as JSON"):
        module_levels(str(tmp_path / "missing.json"))


def test_graph_report_and_report_of_a_training_run():
    opts = popart.SessionOptions()
    opts.engineOptions = {"debug.instrument": "true"}
    opts.instrumentWithHardwareCycleCounter = True  # for getCycleCount, as PopART needs
    training, model = training_session(opts)
    training.prepareDevice()
    training.weightsFromHost()
    xs, labels = data(model, 2)
    training.run(popart.PyStepIO({model.x: xs, model.label: labels}, {}))
    graph = json.loads(training.getGraphReport())
    assert graph["ops"] > graph["onnxNodes"] > 0 and graph["ipus"][0]["peakBytes"] > 0
    report = training.getReport()
    assert report.compilation == graph and report.execution["cycles"] == training.getCycleCount()
    plain, _ = training_session()
    plain.prepareDevice()
    with pytest.raises(popart.popart_exception, match="getReport needs profiling"):
        plain.getReport()
