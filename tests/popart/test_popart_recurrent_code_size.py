"""An LSTM unrolled over its sequence costs the code of one step (Poplar loops over the steps), so its
estimated code does not grow with the sequence length."""
import numpy as np

import popart
from workbench.analysis.code_size import CODE_BYTES, graph_code_bytes


def lstm_session(seq: int, hidden: int = 5, inputs: int = 3, batch: int = 2):
    rng = np.random.default_rng(0)
    builder = popart.Builder()
    x = builder.addInputTensor(popart.TensorInfo("FLOAT", [seq, batch, inputs]))
    w = builder.addInitializedInputTensor(rng.normal(size=(1, 4 * hidden, inputs)).astype(np.float32))
    r = builder.addInitializedInputTensor(rng.normal(size=(1, 4 * hidden, hidden)).astype(np.float32))
    y, _, _ = builder.aiOnnx.lstm([x, w, r], 3)
    session = popart.InferenceSession(fnModel=builder.getModelProto(),
                                      dataFlow=popart.DataFlow(1, {y: popart.AnchorReturnType("All")}),
                                      deviceInfo=popart.DeviceManager().createCpuDevice())
    return session, x, y


def code(seq: int) -> int:
    session, _, _ = lstm_session(seq)
    return sum(graph_code_bytes(session.ir.main_graph).values())


def test_the_code_of_an_lstm_is_that_of_one_step():
    short, long = code(2), code(16)
    assert long - short <= 2 * CODE_BYTES["concat"]  # the joined outputs' copies, at most
    assert short >= 2 * CODE_BYTES["matmul"]  # one step's matmuls are counted

