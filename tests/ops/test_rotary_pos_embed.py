"""The rotary positional embedding of popxl-addons' C++ custom op (neighbouring pairs rotated forward and back)
and of the Llama and Dolly applications' copy of it (two halves of the first ``rotary_dim`` elements rotated
forward, neighbouring pairs rotated back in its gradient op); an application's own ``rotary_pos_embed_binding``
imports as the copy, popxl-addons' as its op."""
import importlib
import sys

import numpy as np
import pytest

import popxl
import popxl.ops as ops
from workbench.ops.rotary import rotary_pos_embed

BATCH, SEQ, HEADS, HEAD = 2, 3, 2, 6
ROTARY = 4
RNG = np.random.default_rng(0)
X = RNG.standard_normal((BATCH, SEQ, HEADS, HEAD)).astype(np.float32)
DY = RNG.standard_normal((BATCH, SEQ, HEADS, HEAD)).astype(np.float32)
ANGLES = RNG.uniform(-3, 3, (1, SEQ, ROTARY // 2)).astype(np.float32)
SIN, COS = np.sin(ANGLES), np.cos(ANGLES)


def expected_forward(x):
    """x[i] and x[i + rotary/2] as one complex number, rotated by its angle; the rest unchanged."""
    half = ROTARY // 2
    s, c = SIN[:, :, None, :], COS[:, :, None, :]
    out = x.copy()
    a, b = x[..., :half], x[..., half:ROTARY]
    out[..., :half] = a * c - b * s
    out[..., half:ROTARY] = b * c + a * s
    return out


def expected_pairs_forward(x):
    """x[2i] and x[2i + 1] as one complex number, rotated by its angle; the rest unchanged."""
    s, c = SIN[:, :, None, :], COS[:, :, None, :]
    out = x.copy()
    real, imag = x[..., 0:ROTARY:2], x[..., 1:ROTARY:2]
    out[..., 0:ROTARY:2] = real * c - imag * s
    out[..., 1:ROTARY:2] = imag * c + real * s
    return out


def expected_gradient(dy):
    """x[2i] and x[2i + 1] as one complex number, rotated back by its angle; the rest unchanged."""
    s, c = SIN[:, :, None, :], COS[:, :, None, :]
    out = dy.copy()
    real, imag = dy[..., 0:ROTARY:2], dy[..., 1:ROTARY:2]
    out[..., 0:ROTARY:2] = real * c + imag * s
    out[..., 1:ROTARY:2] = imag * c - real * s
    return out


def run(build):
    """y = build(x, sin, cos) and the gradient of y at x for the output gradient DY."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X, name="x")
        sin, cos = popxl.constant(SIN, name="sin"), popxl.constant(COS, name="cos")
        graph = ir.create_graph(build, x, sin, cos)
        call_info = ops.call_with_info(graph, x, sin, cos)
        (y,) = call_info.outputs
        grad_info = popxl.transforms.autodiff(graph, grads_required=[graph.inputs[0]])
        (dx,) = ops.call(grad_info.graph, popxl.constant(DY, name="dy"), inputs_dict=grad_info.inputs_dict(call_info))
        y_d2h, dx_d2h = popxl.d2h_stream(X.shape, popxl.float32, "y"), popxl.d2h_stream(X.shape, popxl.float32, "dx")
        ops.host_store(y_d2h, y)
        ops.host_store(dx_d2h, dx)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    return outputs[y_d2h], outputs[dx_d2h]


def test_the_applications_forward_rotates_halves_and_its_gradient_rotates_pairs_back():
    y, dx = run(lambda x, sin, cos: rotary_pos_embed(x, sin, cos, ROTARY, halves=True))
    np.testing.assert_allclose(y, expected_forward(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dx, expected_gradient(DY), rtol=1e-6, atol=1e-6)


def test_popxl_addons_forward_and_gradient_rotate_neighbouring_pairs():
    y, dx = run(lambda x, sin, cos: rotary_pos_embed(x, sin, cos, ROTARY))
    np.testing.assert_allclose(y, expected_pairs_forward(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dx, expected_gradient(DY), rtol=1e-6, atol=1e-6)


def test_an_odd_rotary_dim_is_refused():
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="multiple of 2"):
        rotary_pos_embed(popxl.constant(X), popxl.constant(SIN), popxl.constant(COS), 3)


@pytest.fixture(params=["app_modelling", "popxl_addons"])
def binding(request, tmp_path, monkeypatch):
    """The rotary binding's module in an application's package, or in one named as popxl-addons is."""
    package = request.param
    saved = {name: module for name, module in sys.modules.items() if name.startswith(package)}
    for name in saved:
        del sys.modules[name]
    folder = tmp_path / package / "rotary"
    folder.mkdir(parents=True)
    (tmp_path / package / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    (folder / "rotary_pos_embed_binding.cpp").write_text("// cppimport\n// C++ source\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package, importlib.import_module(f"{package}.rotary.rotary_pos_embed_binding")
    for name in [m for m in sys.modules if m.startswith(package)]:
        del sys.modules[name]
    sys.modules.update(saved)


def test_an_applications_binding_rotates_halves_and_popxl_addons_neighbouring_pairs(binding):
    package, module = binding

    def build(x, sin, cos):
        ctx = popxl.context.get_current_context()
        graph = ctx.graph
        op = module.RotaryPosEmbedOp.createOpInGraph(
            graph._pb_graph, {0: x.id, 1: sin.id, 2: cos.id}, {0: graph._create_tensor_id("t_rotated")}, ROTARY,
            ctx._get_op_settings("RotaryPosEmbedOp"))
        ctx._op_created(op)
        return popxl.Tensor._from_pb_tensor(op.outTensor(0))

    y, dx = run(build)
    expected = expected_forward(X) if package == "app_modelling" else expected_pairs_forward(X)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dx, expected_gradient(DY), rtol=1e-6, atol=1e-6)
