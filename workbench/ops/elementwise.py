"""Elementwise ops: one registry entry and one front-end function per op, mostly made by two factories.

Unary math ops, predicates, increment_mod and the broadcasting binary ops (arithmetic, comparison,
logic) live here; activations and clip are in ``activations.py``; maximum, where and scaled_add in
``elementwise_nary.py``.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from workbench.ir import Op, Tensor, TensorSpec, constant, dtypes

from .arguments import expect_tensors
from .casting import cast
from .registry import OpDef, apply, register, zero_gradient
from .rules import broadcast_shape, check_dtype, same_dtype

__all__ = ["abs", "ceil", "floor", "sign", "negate", "sqrt", "exp", "exp_", "log", "log2", "cos", "sin",
           "tanh", "increment_mod", "increment_mod_", "logical_not", "isnan", "isinf", "isfinite", "add",
           "add_", "sub", "mul", "div", "fmod", "pow", "equal", "greater", "logical_and", "logical_or"]
# Also defined here but left out of __all__, as popxl has no such op: greater_equal (Tensor >= and <=).

KernelFor = Callable[[Op], Callable[..., np.ndarray]]
# The front-end functions; the ones a gradient rule calls before their definition are declared with these.
UnaryFront = Callable[[Tensor], Tensor]
BinaryFront = Callable[[Tensor, Tensor], Tensor]


def _in_place(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A kernel that writes ``fn``'s result into its first argument and returns that argument
    (a NumPy ufunc writes there directly, without a temporary)."""
    if isinstance(fn, np.ufunc):
        return lambda target, *others: fn(target, *others, out=target)

    def kernel(target, *others):
        target[...] = fn(target, *others)
        return target
    return kernel


def _in_place_rhs(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """A binary kernel that writes ``fn(lhs, rhs)`` into ``rhs`` and returns it."""
    if isinstance(fn, np.ufunc):
        return lambda lhs, target: fn(lhs, target, out=target)

    def kernel(lhs, target):
        target[...] = fn(lhs, target)
        return target
    return kernel


def _named(function: Callable, name: str, doc: str) -> Callable:
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def _in_place_doc(doc: str, target: str) -> str:
    return doc.rstrip(".") + f", in place: the result overwrites ``{target}``."


def register_elementwise(op_type: str, infer, build, *, grad=None, in_place: bool = False,
                         in_place_infer=None, in_place_build=None, into=None, popart_class: str = "",
                         popart_inplace_class: str = "", more_variants: tuple[str, ...] = ()) -> None:
    """Register ``op_type`` and, when ``in_place``, ``op_type_`` writing into input 0 (with the kernel
    of ``in_place_build`` if given, else ``build``'s result written into input 0; ``into`` as
    ``OpDef.into``); ``popart_class`` and ``popart_inplace_class`` name PopART's classes of the two.
    The in-place variants of ``op_type`` are ``op_type_`` then ``more_variants`` (registered by the caller)."""
    variants = ((op_type + "_",) if in_place else ()) + more_variants
    register(OpDef(op_type, infer, build, grad=grad, popart_class=popart_class, inplace_variants=variants))
    if in_place:
        register(OpDef(op_type + "_", in_place_infer or infer,
                       in_place_build or (lambda op, env: _in_place(build(op, env))), modifies=(0,),
                       aliases=((0, 0),), into=into, pure_update=True, popart_class=popart_inplace_class))


def like_input(op_type: str, allowed: str, out_dtype: Optional[dtypes.dtype] = None):
    """The shape rule of a unary elementwise op: input 0's shape, its dtype (or ``out_dtype``)."""
    def infer(specs, attrs):
        check_dtype(op_type, specs[0], allowed)
        return [TensorSpec(specs[0].shape, out_dtype or specs[0].dtype)]
    return infer


def checked_when_compiled(allowed: str, build):
    """A kernel builder that first checks input 0 against ``allowed``: for ops that popxl builds for any
    dtype but that the IPU runs for some only, refused when a Session compiles them."""
    def checked(op, env):
        check_dtype(op.type, op.inputs[0].spec, allowed)
        return build(op, env)
    return checked


def unary_op(op_type: str, fn: Callable[[np.ndarray], np.ndarray], doc: str, *, allowed: str = "number",
             out_dtype: Optional[dtypes.dtype] = None, grad=None, in_place: bool = False,
             kernel_for: Optional[KernelFor] = None, popart_class: str = "", popart_inplace_class: str = "",
             built_for: str = ""):
    """Register ``op_type`` (and ``op_type_`` when ``in_place``) and return the front-end function(s).

    ``kernel_for(op)`` may pick a kernel by dtype instead of the fixed ``fn``. ``built_for``: the dtypes
    accepted when the graph is built where popxl accepts more than ``allowed``, which is then checked when
    a Session compiles the op.
    """
    def build(op, env):
        return kernel_for(op) if kernel_for else fn
    if built_for:
        build = checked_when_compiled(allowed, build)
    accepted = built_for or allowed
    register_elementwise(op_type, like_input(op_type, accepted, out_dtype), build, grad=grad, in_place=in_place,
                         in_place_infer=like_input(op_type + "_", accepted, out_dtype), popart_class=popart_class,
                         popart_inplace_class=popart_inplace_class)

    def front(t: Tensor) -> Tensor:
        return apply(op_type, t)

    _named(front, op_type, doc)
    if not in_place:
        return front

    def front_in_place(t: Tensor) -> Tensor:
        return apply(op_type + "_", t)

    return front, _named(front_in_place, op_type + "_", _in_place_doc(doc, "t"))


def binary_entries(op_type: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], *,
                   allowed: str = "number", out_dtype: Optional[dtypes.dtype] = None, grad=None,
                   kernel_for: Optional[KernelFor] = None, popart_class: str = "", popart_inplace_class: str = "",
                   popart_rhs_inplace_class: str = "") -> None:
    """Register a broadcasting binary op (both inputs of one dtype); ``kernel_for(op)`` may pick a
    kernel by dtype. With ``popart_inplace_class``, ``op_type_`` writes the result into lhs; with
    ``popart_rhs_inplace_class``, ``op_type_rhs_`` writes it into rhs (PopART's Lhs/RhsInplace classes):
    each only where the result has the shape of the tensor it overwrites."""

    def infer_for(name: str, updated: Optional[int]):
        def infer(specs, attrs):
            dtype = same_dtype(name, specs)
            check_dtype(name, specs[0], allowed)
            shape = broadcast_shape(name, specs[0].shape, specs[1].shape)
            if updated is not None and shape != specs[updated].shape:
                raise ValueError(f"{name}: the result shape {shape} differs from the shape "
                                 f"{specs[updated].shape} of the tensor updated in place")
            return [TensorSpec(shape, out_dtype or dtype)]
        return infer

    def build(op, env):
        return kernel_for(op) if kernel_for else fn

    rhs_type = op_type + "_rhs_"
    register_elementwise(op_type, infer_for(op_type, None), build, grad=grad, in_place=bool(popart_inplace_class),
                         in_place_infer=infer_for(op_type + "_", 0), popart_class=popart_class,
                         popart_inplace_class=popart_inplace_class,
                         more_variants=(rhs_type,) if popart_rhs_inplace_class else ())
    if popart_rhs_inplace_class:
        register(OpDef(rhs_type, infer_for(rhs_type, 1), lambda op, env: _in_place_rhs(build(op, env)),
                       modifies=(1,), aliases=((0, 1),), popart_class=popart_rhs_inplace_class))


def binary_op(op_type: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str, *,
              allowed: str = "number", out_dtype: Optional[dtypes.dtype] = None, grad=None,
              in_place: bool = False, kernel_for: Optional[KernelFor] = None, popart_class: str = "",
              popart_inplace_class: str = "", popart_rhs_inplace_class: str = ""):
    """Register a broadcasting binary op and return its front-end function ``f(lhs, rhs)``, and when
    ``in_place`` (popxl has it) ``f_`` writing into lhs, PopART's ``popart_inplace_class``."""
    binary_entries(op_type, fn, allowed=allowed, out_dtype=out_dtype, grad=grad, kernel_for=kernel_for,
                   popart_class=popart_class, popart_inplace_class=popart_inplace_class,
                   popart_rhs_inplace_class=popart_rhs_inplace_class)

    def front(lhs: Tensor, rhs: Tensor) -> Tensor:
        return apply(op_type, lhs, rhs)

    _named(front, op_type, doc)
    if not in_place:
        return front

    def front_in_place(lhs: Tensor, rhs: Tensor) -> Tensor:
        return apply(op_type + "_", lhs, rhs)

    return front, _named(front_in_place, op_type + "_", _in_place_doc(doc, "lhs"))


# ----- unary math -----
def _sign(a: np.ndarray) -> np.ndarray:
    """np.sign, except that NaN has sign 0 as on the IPU."""
    result = np.asarray(np.sign(a))  # 0-d inputs give NumPy scalars, which cannot be written
    result[np.isnan(result)] = 0
    return result


def _sign_kernel(op: Op):
    return _sign if op.outputs[0].dtype.is_floating_point else np.sign


def _output(op: Op, fwd) -> Tensor:
    return fwd(op.outputs[0])


def _input(op: Op, fwd, index: int = 0) -> Tensor:
    return fwd(op.inputs[index])


def _half(t: Tensor) -> Tensor:
    return constant(0.5, dtype=t.dtype)


abs = unary_op("abs", np.abs, "Absolute value of each element.",  # noqa: A001 - popxl's name
               grad=lambda op, g, fwd: [mul(g[0], sign(_input(op, fwd)))], popart_class="AbsOp")
ceil = unary_op("ceil", np.ceil, "Round each element up to an integer value (NaN stays NaN).",
                allowed="float", grad=zero_gradient, popart_class="CeilOp")
floor = unary_op("floor", np.floor, "Round each element down to an integer value (NaN stays NaN).",
                 allowed="float", grad=zero_gradient, popart_class="FloorOp")
sign: UnaryFront = unary_op("sign", np.sign, "The sign of each element: -1, 0 or 1 (0 for NaN).",
                kernel_for=_sign_kernel, grad=zero_gradient, popart_class="SignOp")
negate: UnaryFront = unary_op("negate", np.negative, "Negate each element.", grad=lambda op, g, fwd: [negate(g[0])],
                  popart_class="NegateOp")
sqrt = unary_op("sqrt", np.sqrt, "Square root of each element.", allowed="float",
                grad=lambda op, g, fwd: [div(mul(g[0], _half(g[0])), _output(op, fwd))], popart_class="SqrtOp")
exp, exp_ = unary_op("exp", np.exp, "e raised to each element.", allowed="float", in_place=True,
                     grad=lambda op, g, fwd: [mul(g[0], _output(op, fwd))],
                     popart_class="ExpOp", popart_inplace_class="ExpInplaceOp")
log = unary_op("log", np.log, "Natural logarithm of each element.", allowed="float",
               grad=lambda op, g, fwd: [div(g[0], _input(op, fwd))], popart_class="LogOp")
cos = unary_op("cos", np.cos, "Cosine of each element (radians).", allowed="float",
               grad=lambda op, g, fwd: [negate(mul(g[0], sin(_input(op, fwd))))], popart_class="CosOp")
sin: UnaryFront = unary_op("sin", np.sin, "Sine of each element (radians).", allowed="float",
               grad=lambda op, g, fwd: [mul(g[0], cos(_input(op, fwd)))], popart_class="SinOp")


def _tanh_grad(op, grads, fwd):
    """(1 - y^2) g."""
    y = _output(op, fwd)
    return [mul(grads[0], sub(constant(1, dtype=y.dtype), mul(y, y)))]


tanh = unary_op("tanh", np.tanh, "Hyperbolic tangent of each element.", allowed="float", grad=_tanh_grad,
                popart_class="TanhOp")


# ----- increment_mod -----
def _increment_mod_kernel(op: Op, env):
    dtype = op.outputs[0].dtype.as_numpy()
    increment = np.asarray(op.attrs["increment"]).astype(dtype)
    modulus = np.asarray(op.attrs["modulus"]).astype(dtype)
    return lambda a: np.fmod(a + increment, modulus)


register_elementwise("increment_mod", like_input("increment_mod", "number"), _increment_mod_kernel,
                     grad=lambda op, grads, fwd: [grads[0]], in_place=True,
                     in_place_infer=like_input("increment_mod_", "number"),
                     popart_class="IncrementModOp", popart_inplace_class="IncrementModInplaceOp")


def _increment_mod_attrs(op_type: str, increment: float, modulus: float) -> dict:
    for name, value in (("increment", increment), ("modulus", modulus)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"{op_type}: {name} must be a number, got {value!r}")
    if modulus == 0:
        raise ValueError(f"{op_type}: modulus must not be zero")
    return {"increment": float(increment), "modulus": float(modulus)}


def increment_mod(t: Tensor, increment: float, modulus: float) -> Tensor:
    """``(t + increment) mod modulus`` per element (C's fmod: the sign follows the dividend)."""
    return apply("increment_mod", t, **_increment_mod_attrs("increment_mod", increment, modulus))


def increment_mod_(t: Tensor, increment: float, modulus: float) -> Tensor:
    """``(t + increment) mod modulus`` per element, in place: the result overwrites ``t``."""
    return apply("increment_mod_", t, **_increment_mod_attrs("increment_mod_", increment, modulus))


# ----- predicates -----
unary_op("logical_not", np.logical_not, "", allowed="bool", popart_class="NotOp")


def _as_bool(t: Tensor) -> Tensor:
    """popxl's logical ops cast a non-bool input to bool first (non-zero is true)."""
    return t if t.dtype is dtypes.bool_ else cast(t, dtypes.bool_)


def logical_not(t: Tensor) -> Tensor:
    """Elementwise logical not; a non-bool ``t`` is cast to bool first, as in popxl."""
    return apply("logical_not", _as_bool(t))


isnan = unary_op("isnan", np.isnan, "True where an element is NaN.", out_dtype=dtypes.bool_, popart_class="IsNaN")
isinf = unary_op("isinf", np.isinf, "True where an element is +inf or -inf.", out_dtype=dtypes.bool_,
                 popart_class="IsInf")


# ----- binary arithmetic -----
def _divide_kernel(op: Op):
    """Floats divide; integers truncate toward zero as the IPU does, and refuse a zero divisor (which
    has no integer result) rather than give whatever an infinity casts to."""
    if op.outputs[0].dtype.is_floating_point:
        return np.divide

    def integer_divide(a, b):
        if not np.all(b):
            raise ZeroDivisionError(f"integer division by zero: {np.size(b) - np.count_nonzero(b)} of the "
                                    f"{np.size(b)} divisor elements are 0")
        return np.trunc(np.true_divide(a, b)).astype(a.dtype)
    return integer_divide


def _power_kernel(op: Op):
    """Floats use np.power; integers go through float64 and truncate, so that negative exponents
    give C's ``(int) pow(a, b)`` instead of NumPy's error."""
    if op.outputs[0].dtype.is_floating_point:
        return np.power
    return lambda a, b: np.trunc(np.power(a, b, dtype=np.float64)).astype(a.dtype)


def _div_grad(op, grads, fwd):
    """d(a/b) = g/b, -g a/b^2."""
    a, b = _input(op, fwd, 0), _input(op, fwd, 1)
    quotient = div(grads[0], b)
    return [quotient, negate(div(mul(quotient, a), b))]


def _fmod_grad(op, grads, fwd):
    """fmod(a, b) = a - trunc(a/b) b, and trunc(a/b) = (a - fmod(a, b)) / b."""
    a, b = _input(op, fwd, 0), _input(op, fwd, 1)
    quotient = div(sub(a, _output(op, fwd)), b)
    return [grads[0], negate(mul(grads[0], quotient))]


def _pow_grad(op, grads, fwd):
    """d(a^b) = g b a^(b-1) for a, g a^b log(a) for b."""
    a, b = _input(op, fwd, 0), _input(op, fwd, 1)
    one = constant(1, dtype=a.dtype)
    return [mul(grads[0], mul(b, pow(a, sub(b, one)))), mul(grads[0], mul(_output(op, fwd), log(a)))]


add, add_ = binary_op("add", np.add, "Add two tensors elementwise, broadcasting as NumPy does.",
                      in_place=True, grad=lambda op, g, fwd: [g[0], g[0]], popart_class="AddOp",
                      popart_inplace_class="AddLhsInplaceOp", popart_rhs_inplace_class="AddRhsInplaceOp")
sub = binary_op("sub", np.subtract, "Subtract ``rhs`` from ``lhs`` elementwise (broadcasting).",
                grad=lambda op, g, fwd: [g[0], negate(g[0])], popart_class="SubtractOp")
mul: BinaryFront = binary_op("mul", np.multiply, "Multiply two tensors elementwise (broadcasting).",
                grad=lambda op, g, fwd: [mul(g[0], _input(op, fwd, 1)), mul(g[0], _input(op, fwd, 0))],
                popart_class="MulOp", popart_inplace_class="MulLhsInplaceOp",
                popart_rhs_inplace_class="MulRhsInplaceOp")
div: BinaryFront = binary_op("div", np.divide, "Divide ``lhs`` by ``rhs`` elementwise (broadcasting); integer "
                "division truncates toward zero.", kernel_for=_divide_kernel, grad=_div_grad, popart_class="DivOp")
fmod = binary_op("fmod", np.fmod, "Remainder of ``lhs / rhs`` elementwise with the sign of ``lhs``, "
                 "as C's fmod (broadcasting).", grad=_fmod_grad, popart_class="FmodOp")
binary_entries("pow", np.power, kernel_for=_power_kernel, grad=_pow_grad, popart_class="PowOp",
               popart_inplace_class="PowLhsInplaceOp")


def pow(t: Tensor, e: Union[float, int, Tensor]) -> Tensor:  # noqa: A001 - popxl's name
    """Raise each element of ``t`` to the power ``e`` (broadcasting); a number ``e`` becomes a
    constant of ``t``'s dtype."""
    if not isinstance(t, Tensor):
        raise TypeError(f"pow: t must be a Tensor, got {type(t).__name__} {t!r}")
    if not isinstance(e, Tensor):
        check_dtype("pow", t.spec, "number")
        e = constant(e, dtype=t.dtype)
    return apply("pow", t, e)


# ----- comparison and logic -----
equal = binary_op("equal", np.equal, "True where ``lhs`` equals ``rhs`` (broadcasting).", allowed="any",
                  out_dtype=dtypes.bool_, popart_class="EqualOp")
binary_entries("greater", np.greater, out_dtype=dtypes.bool_, popart_class="GreaterOp")


def greater(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - popxl's parameter name
    """True where ``input`` is greater than ``other`` (broadcasting)."""
    return apply("greater", input, other)


greater_equal = binary_op("greater_equal", np.greater_equal,
                          "True where ``lhs`` is greater than or equal to ``rhs`` (broadcasting). "
                          "Not in popxl itself; ``Tensor.__ge__`` and ``__le__`` use it.",
                          out_dtype=dtypes.bool_, popart_class="GreaterOrEqualOp")
binary_entries("logical_and", np.logical_and, allowed="bool", popart_class="AndOp")
binary_entries("logical_or", np.logical_or, allowed="bool", popart_class="OrOp")


def logical_and(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise logical and (broadcasting); non-bool inputs are cast to bool first, as in popxl."""
    return apply("logical_and", _as_bool(lhs), _as_bool(rhs))


def logical_or(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise logical or (broadcasting); non-bool inputs are cast to bool first, as in popxl."""
    return apply("logical_or", _as_bool(lhs), _as_bool(rhs))


# ----- compositions, built from the ops above as popxl builds them -----
def log2(t: Tensor) -> Tensor:
    """Base-2 logarithm of each element: ``log(t) / log(2)``, two Log ops and a Div as in popxl."""
    expect_tensors("log2", t=t)
    check_dtype("log2", t.spec, "float")
    return div(log(t), log(constant(2.0, t.dtype)))


def isfinite(t: Tensor) -> Tensor:
    """True where an element is neither infinite nor NaN: ``not (isnan(t) or isinf(t))``, named
    ``isfinite_out`` as in popxl."""
    expect_tensors("isfinite", t=t)
    return apply("identity", logical_not(logical_or(isnan(t), isinf(t))), name="isfinite_out")

