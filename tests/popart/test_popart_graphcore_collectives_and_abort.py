"""aiGraphcore's abort, replicated all-reduce and reduce-scatter (with their operator and CommGroup),
and scatterreduce, run on replicated sessions and checked against NumPy."""
import numpy as np
import pytest

import popart


def run(builder, outputs, inputs=None, replicas=1, batches=1):
    """Anchors of ``outputs`` (all batches) after one run on ``replicas`` replicas."""
    options = popart.SessionOptions()
    options.enableReplicatedGraphs = replicas > 1
    options.replicatedGraphCount = replicas
    session = popart.InferenceSession(
        fnModel=builder.getModelProto(), dataFlow=popart.DataFlow(batches, {o: popart.AnchorReturnType("All")
                                                                            for o in outputs}),
        deviceInfo=popart.DeviceManager().createIpuModelDevice({"numIPUs": replicas}), userOptions=options)
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    session.run(popart.PyStepIO(inputs or {}, anchors))
    return anchors


def abort_model(condition=None):
    builder = popart.Builder()
    x = builder.addInitializedInputTensor(np.arange(4, dtype=np.float32))
    out = builder.aiOnnx.abs([x])
    if condition is None:
        builder.aiGraphcore.abort([])
    else:
        flag = builder.addInitializedInputTensor(np.array([condition], np.float32))
        builder.aiGraphcore.abort([flag])
    builder.addOutputTensor(out)
    return builder, out


def test_an_unconditional_abort_stops_the_run_with_a_poplar_runtime_error():
    builder, out = abort_model()
    with pytest.raises(popart.poplar_runtime_error, match="^Abort Program"):
        run(builder, [out])
    assert issubclass(popart.poplar_runtime_error, popart.poplar_exception)


def test_a_conditional_abort_stops_only_when_its_value_is_non_zero():
    builder, out = abort_model(0.0)
    np.testing.assert_array_equal(run(builder, [out])[out], np.arange(4))
    builder, out = abort_model(1.0)
    with pytest.raises(popart.poplar_runtime_error):
        run(builder, [out])


def test_a_conditional_abort_tests_one_value():
    builder = popart.Builder()
    flags = builder.addInitializedInputTensor(np.zeros(2, np.float32))
    with pytest.raises(popart.popart_exception, match="can only test a scalar tensor"):
        builder.aiGraphcore.abort([flags])


def replica_inputs(replicas, width):
    """A model reading a different row per replica: the rows 0.., 10.., 20.., ..."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [width]))
    data = (np.arange(width)[None, :] + 10 * np.arange(replicas)[:, None]).astype(np.float32)
    return builder, x, data


@pytest.mark.parametrize("operator, reduce", [(None, np.sum), (popart.CollectiveOperator.Add, np.sum),
                                              (popart.CollectiveOperator.Max, np.max),
                                              (popart.CollectiveOperator.Mean, np.mean)])
def test_replicated_all_reduce_gives_every_replica_the_reduction(operator, reduce):
    builder, x, data = replica_inputs(4, 3)
    out = builder.aiGraphcore.replicatedallreduce([x], operator)
    got = run(builder, [out], {x: data}, replicas=4)[out]
    np.testing.assert_allclose(got, np.broadcast_to(reduce(data, axis=0), (4, 3)))


def test_replicated_all_reduce_within_consecutive_groups():
    builder, x, data = replica_inputs(4, 2)
    out = builder.aiGraphcore.replicatedallreduce([x], commGroup=popart.CommGroup(popart.CommGroupType.Consecutive, 2))
    got = run(builder, [out], {x: data}, replicas=4)[out]
    pairs = data.reshape(2, 2, 2).sum(axis=1)
    np.testing.assert_allclose(got, np.repeat(pairs, 2, axis=0))


def test_replicated_reduce_scatter_leaves_each_replica_its_shard_of_the_sum():
    builder, x, data = replica_inputs(4, 8)
    out = builder.aiGraphcore.replicatedreducescatter([x])
    got = run(builder, [out], {x: data}, replicas=4)[out]
    np.testing.assert_allclose(got, data.sum(axis=0).reshape(4, 2))


def test_collective_attributes_as_popart_writes_them():
    builder, x, _ = replica_inputs(4, 2)
    a = builder.aiGraphcore.replicatedallreduce([x], popart.CollectiveOperator.Max,
                                                popart.CommGroup(popart.CommGroupType.Orthogonal, 2))
    assert builder.getInt64NodeAttribute("__collectiveOperator", {a}) == 4
    assert builder.getInt64VectorNodeAttribute("__collectiveCommGroup", {a}) == [2, 2]
    with builder.commGroup(popart.CommGroupType.Consecutive, 4):
        b = builder.aiGraphcore.replicatedallreduce([x])
    assert builder.getInt64VectorNodeAttribute("__collectiveCommGroup", {b}) == [int(popart.CommGroupType.Consecutive), 4]


def test_scatterreduce_matches_numpy_and_takes_float_indices_by_value():
    data = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    index = np.array([[2, 0, 2], [1, 1, 0]])
    builder = popart.Builder()
    d = builder.addInitializedInputTensor(data)
    i = builder.addInitializedInputTensor(index.astype(np.float32))
    out = builder.aiGraphcore.scatterreduce([d, i], axis_size=4)
    assert builder.getTensorShape(out) == [2, 4]
    high = builder.aiGraphcore.scatterreduce([d, i], axis_size=4, reduction=popart.ScatterReduction.Max)
    anchors = run(builder, [out, high])
    expected_sum, expected_max = np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32)
    np.add.at(expected_sum, (np.arange(2)[:, None], index), data)
    np.maximum.at(expected_max, (np.arange(2)[:, None], index), data)
    np.testing.assert_allclose(anchors[out], expected_sum)
    np.testing.assert_allclose(anchors[high], expected_max)


def test_gather_takes_float_indices_by_value():
    builder = popart.Builder()
    table = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = builder.addInitializedInputTensor(table)
    i = builder.addInitializedInputTensor(np.array([2.0, 0.0], np.float32))
    out = builder.aiOnnx.gather([t, i], axis=1)
    np.testing.assert_array_equal(run(builder, [out])[out], table[:, [2, 0]])
