"""A popxl Session made with a PopART DeviceInfo: it runs on that device's simulation, starts attached (with one
copy of the weights) when the device is attached, and attaches and detaches the device itself otherwise.
``Session.ir_`` is the Ir, as in popxl."""
import logging

import numpy as np

import popart
import popxl
import popxl.ops as ops


def _ir():
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.float32(1.5), name="v")
        d2h = popxl.d2h_stream(v.shape, v.dtype, name="v_out")
        ops.host_store(d2h, v * 2)
    return ir, d2h


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_an_attached_device_makes_the_session_attached_with_one_weights_copy():
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1})
    assert device.attach()
    ir, d2h = _ir()
    logger, lines = logging.getLogger("popart.devicex"), _Lines()
    logger.addHandler(lines)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        session = popxl.Session(ir, device)
        assert session.ir_ is ir and session.device.kind == "ipu_model" and session.is_attached
        with session:
            np.testing.assert_array_equal(session.run()[d2h], 3.0)
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
    assert lines.lines.count("Writing weights from host, ") == 1
    assert session.is_attached and device.isAttached  # attached before the `with`, so still after it
    device.detach()


def test_a_detached_device_is_attached_for_the_with_block_only():
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 1})
    ir, d2h = _ir()
    session = popxl.Session(ir, device)
    assert not session.is_attached and not device.isAttached
    with session:
        assert device.isAttached
        np.testing.assert_array_equal(session.run()[d2h], 3.0)
    assert not device.isAttached and not session.is_attached
