"""DeviceManager over the simulated POD, DeviceInfo, SessionOptions and the module's small helpers."""
import pytest

import popart
from workbench.popart.devices import POD_IPUS


def test_created_devices_describe_themselves():
    manager = popart.DeviceManager()
    cpu = manager.createCpuDevice()
    model = manager.createIpuModelDevice({"numIPUs": 4, "tilesPerIPU": 64, "compileIPUCode": True})
    assert (cpu.type, cpu.numIpus) == (popart.DeviceType.Cpu, 1)
    assert (model.type, model.numIpus, model.tilesPerIPU) == (popart.DeviceType.IpuModel, 4, 64)
    assert model.workbench_device().tiles_per_ipu == 64
    assert manager.createSimDevice({"numIPUs": 2}).type is popart.DeviceType.Sim
    with pytest.raises(popart.popart_exception, match="Unknown device option"):
        manager.createIpuModelDevice({"numIpuz": 2})


def test_acquire_takes_free_ipus_of_the_pod_and_detach_gives_them_back():
    manager = popart.DeviceManager()
    pair = manager.acquireAvailableDevice(2)
    other = manager.acquireAvailableDevice(2)
    assert pair.isAttached and pair.numIpus == 2 and pair.type is popart.DeviceType.Ipu
    assert set(pair.driverIds).isdisjoint(other.driverIds)
    taken = pair.id
    pair.detach()
    other.detach()
    again = manager.acquireDeviceById(taken)
    assert again.id == taken and again.isAttached
    assert manager.tryAcquireDeviceById(taken) is None  # its IPUs are held
    with pytest.raises(popart.popart_exception, match=f"Failed to acquire device with id '{taken}'"):
        manager.acquireDeviceById(taken)
    again.detach()
    with pytest.raises(popart.popart_exception, match="Failed to acquire device with 3 IPUs. .* devices of 1, 2, 4"):
        manager.acquireAvailableDevice(3)
    with pytest.raises(popart.poplar_exception, match="No such device set id: '999'"):
        manager.acquireDeviceById(999)


def test_acquiring_when_every_device_is_attached():
    manager = popart.DeviceManager()
    everything = manager.acquireAvailableDevice(POD_IPUS)
    try:
        assert manager.tryAcquireAvailableDevice(1) is None
        with pytest.raises(popart.popart_exception, match="Failed to acquire device with 1 IPUs. Ensure that there "
                                                          "are sufficient IPUs available"):
            manager.acquireAvailableDevice(1)
    finally:
        everything.detach()
    assert manager.createSimDevice({}).tilesPerIPU == 4


def test_enumerate_devices_numbers_them_as_gc_info():
    devices = popart.DeviceManager().enumerateDevices(numIpus=1)
    assert [d.id for d in devices[:3]] == [0, 1, 2]
    pairs = popart.DeviceManager().enumerateDevices(numIpus=2)
    assert pairs[0].id == len(devices) and pairs[0].driverIds == [0, 1]


def test_device_is_a_context_manager():
    with popart.DeviceManager().acquireAvailableDevice(1) as device:
        assert device.isAttached
    assert not device.isAttached


def test_offline_device_compiles_but_does_not_run():
    import numpy as np

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    y = builder.aiOnnx.relu([x])
    device = popart.DeviceManager().createOfflineIPUDevice({"numIPUs": 1})
    session = popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]), device)
    session.prepareDevice()
    with pytest.raises(popart.popart_exception, match="offline IPU device"):
        session.run(popart.PyStepIO({x: np.zeros(2, np.float32)}, session.initAnchorArrays()))


def test_session_options_store_every_popart_name_and_reject_others():
    opts = popart.SessionOptions()
    assert opts.constantWeights is True and opts.virtualGraphMode is popart.VirtualGraphMode.Off
    opts.enablePipelining = True
    opts.engineOptions = {"debug.instrument": "true"}
    opts.autoRecomputation = popart.RecomputationType.Standard
    assert opts.enablePipelining and opts.engineOptions == {"debug.instrument": "true"}
    with pytest.raises(AttributeError, match="has no attribute 'enablePipelinning'"):
        opts.enablePipelinning = True
    opts.enableReplicatedGraphs, opts.replicatedGraphCount = True, 4
    assert opts.getGlobalReplicationFactor() == 4


def test_versions_logging_and_supported_operations():
    assert popart.versionString() == "3.4.0" and popart.versionNumber() == (3, 4, 0)
    assert popart.reservedGradientPrefix() == "Gradient___"
    popart.getLogger().setLevel("DEBUG")
    supported = {(op.domain, op.type, op.version) for op in popart.getSupportedOperations(False)}
    assert ("ai.onnx", "Conv", 11) in supported and ("ai.graphcore", "L1", 1) in supported
    unsupported = popart.getUnsupportedOperations(11)
    assert popart.OperatorIdentifier("ai.onnx", "Det", 11) in unsupported
    assert "LRN" not in {op.type for op in unsupported}
    assert not set(unsupported) & set(popart.getSupportedOperations(False))


def test_graph_transformer_converts_types_and_prunes_inputs():
    import numpy as np
    import onnx

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
    builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), "unused")
    w = builder.addInitializedInputTensor(np.ones(2, np.float32))
    k = builder.addInitializedInputTensor(np.array([2, 1], np.int64), "shape")
    y = builder.aiOnnx.reshape([builder.aiOnnx.add([x, w]), k])
    builder.addOutputTensor(y)
    transformer = popart.GraphTransformer(builder.getModelProto())
    transformer.removeUnusedInputs()
    transformer.convertFloatsToHalfs()
    transformer.convertAllFixedPointInitializersToConstants()
    model = onnx.load_from_string(transformer.getModelProto())
    assert [i.name for i in model.graph.input] == [x]
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    assert [i.name for i in model.graph.initializer] == [w] and model.graph.node[0].op_type == "Constant"
    session = popart.InferenceSession(transformer.getModelProto(), popart.DataFlow(1, [y]),
                                      popart.DeviceManager().createCpuDevice())
    session.prepareDevice()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO({x: np.array([1, 2], np.float16)}, anchors))
    np.testing.assert_array_equal(anchors[y], [[2], [3]])


def test_debug_context_names_nodes():
    import onnx

    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]), debugContext=popart.DebugContext("data"))
    builder.aiOnnx.relu([x], popart.DebugContext(popart.DebugContext("block"), "act"))
    assert x == "data"
    assert onnx.load_from_string(builder.getModelProto()).graph.node[0].name == "block/act"


def test_session_logs_through_popart_logger(caplog):
    import logging

    logger = logging.getLogger("popart")
    logger.propagate = True
    try:
        popart.getLogger().setLevel("INFO")
        builder = popart.Builder()
        x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2]))
        y = builder.aiOnnx.relu([x])
        with caplog.at_level(logging.INFO, logger="popart"):
            popart.InferenceSession(builder.getModelProto(), popart.DataFlow(1, [y]),
                                    popart.DeviceManager().createCpuDevice())
        assert "Preparing the Ir of 'inference': 1 ONNX nodes" in caplog.text
    finally:
        logger.propagate = False
        popart.getLogger().setLevel("OFF")
