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
