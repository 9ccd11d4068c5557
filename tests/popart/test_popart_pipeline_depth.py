"""How deep a pipeline must be: training a model whose loss is in stage L runs 2L+1 stages (the
backward of each earlier stage is a stage of its own), and the pipeline is filled by the gradient
accumulation factor when accumulating, else by the batches per step."""
import numpy as np
import pytest

import popart


def two_stage_model():
    """x @ w0 on IPU 0 (stage 0); @ w1 and an L1 loss on IPU 1 (stage 1)."""
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
    with builder.virtualGraph(0), builder.pipelineStage(0):
        h = builder.aiOnnx.matmul([x, builder.addInitializedInputTensor(np.full((3, 3), 0.5, np.float32), "w0")])
    with builder.virtualGraph(1), builder.pipelineStage(1):
        y = builder.aiOnnx.matmul([h, builder.addInitializedInputTensor(np.full((3, 1), 0.25, np.float32), "w1")])
        loss = builder.aiGraphcore.l1loss([y], 1.0, popart.ReductionType.Sum)
    return builder.getModelProto(), x, loss


def training(batches: int, accumulation: int = 1) -> popart.TrainingSession:
    proto, _, loss = two_stage_model()
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Manual
    options.enablePipelining = True
    options.enableGradientAccumulation = accumulation > 1
    options.accumulationFactor = accumulation
    return popart.TrainingSession(proto, popart.DataFlow(batches, [loss]), loss, popart.ConstSGD(0.1),
                                  popart.DeviceManager().createIpuModelDevice({"numIPUs": 2}), userOptions=options)


def test_training_two_forward_stages_needs_three_batches_per_step():
    with pytest.raises(popart.popart_exception,
                       match=r"depth \(batchesPerStep\) must equal at least the number of pipeline stages \(3\)"):
        training(2)
    training(3)


def test_with_accumulation_the_factor_fills_the_pipeline_not_the_batches_per_step():
    with pytest.raises(popart.popart_exception, match=r"depth \(gradient accumulation factor\) must equal at least "
                                                      r"the number of pipeline stages \(3\)"):
        training(8, accumulation=2)
    session = training(1, accumulation=4)
    session.prepareDevice()
    session.weightsFromHost()
    anchors = session.initAnchorArrays()
    proto, x, loss = two_stage_model()
    data = np.ones((4, 2, 3), np.float32)  # 4 micro-batches of one step
    session.run(popart.PyStepIO({x: data}, anchors))
    # every micro-batch sees the first weights: |ones(2,3) @ 0.5 @ 0.25| summed = 2 * 0.375 * 3
    np.testing.assert_allclose(anchors[loss].reshape(-1), np.full(4, 2 * 3 * 0.375), rtol=1e-6)


def test_inference_runs_as_many_stages_as_it_has():
    proto, x, loss = two_stage_model()
    options = popart.SessionOptions()
    options.virtualGraphMode = popart.VirtualGraphMode.Manual
    options.enablePipelining = True
    device = popart.DeviceManager().createIpuModelDevice({"numIPUs": 2})
    popart.InferenceSession(proto, popart.DataFlow(2, [loss]), device, userOptions=options)
    with pytest.raises(popart.popart_exception, match=r"pipeline stages \(2\)"):
        popart.InferenceSession(proto, popart.DataFlow(1, [loss]), device, userOptions=options)
