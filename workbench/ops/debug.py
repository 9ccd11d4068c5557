"""print_tensor: an identity op that prints its input (to stderr, as Poplar does) every time it runs."""
from __future__ import annotations

import sys
from typing import Literal, Optional

import numpy as np

from workbench.ir import Tensor

from .arguments import expect_tensors
from .registry import OpDef, apply, register
from .rules import same_spec

__all__ = ["print_tensor"]

FloatFormat = Literal["auto", "fixed", "scientific", "none"]
_FLOAT_FORMATS = ("auto", "fixed", "scientific", "none")


def _formatter(float_format: str, digits: int, t: np.ndarray):
    if float_format == "fixed":
        return {"float_kind": lambda x: f"{x:.{digits}f}"}
    if float_format == "scientific":
        return {"float_kind": lambda x: f"{x:.{digits}e}"}
    if float_format == "none":
        return {"float_kind": repr}
    return _auto_formatter(digits, t)


def _auto_formatter(digits: int, t: np.ndarray):
    """Poplar's 'auto': ``digits`` significant digits in fixed point (``1.0000000`` for 8), every element with
    the decimals the largest leaves; scientific notation where the magnitudes would not read well in fixed
    point (below 1e-4 or from 1e8 on, as NumPy decides)."""
    if not np.issubdtype(t.dtype, np.floating):
        return None
    finite = np.abs(t[np.isfinite(t)]).astype(np.float64)
    nonzero = finite[finite > 0]
    if nonzero.size and (nonzero.max() >= 1e8 or nonzero.min() < 1e-4):
        return {"float_kind": lambda x: f"{x:.{max(digits - 1, 0)}e}"}
    whole_digits = len(str(int(nonzero.max()))) if nonzero.size else 1
    decimals = max(digits - whole_digits, 0)
    return {"float_kind": lambda x: f"{x:.{decimals}f}"}


def _print_kernel(op, env):
    """Print ``title: values`` (NumPy's layout with the op's options) and pass the input on."""
    attrs = op.attrs
    if not attrs["print_self"]:
        return lambda t: t
    title, options = attrs["title"], attrs["format"]
    open_bracket, close_bracket = options["open_bracket"], options["close_bracket"]

    def show(t):
        formatter = _formatter(options["float_format"], options["digits"], t)
        text = np.array2string(t, max_line_width=options["max_line_width"], precision=options["digits"],
                               separator=options["separator"], threshold=options["summarise_threshold"],
                               edgeitems=options["edge_items"], formatter=formatter)
        if (open_bracket, close_bracket) != ("[", "]"):
            text = text.replace("[", open_bracket).replace("]", close_bracket)
        print(f"{title}: {text}", file=sys.stderr, flush=True)
        return t
    return show


def _print_grad(op, grads, fwd):
    """As popxl: the gradient passes through a print op of its own, which prints it (titled with the
    forward title and ``_gradient``) when the forward op was asked to ``print_gradient``."""
    if grads[0] is None:
        return [None]
    attrs = op.attrs
    title = attrs.get("grad_title") or f"{attrs['title']}_gradient"
    return [apply("print_tensor", grads[0], name="print_out", title=title,
                  print_self=attrs["print_gradient"], print_gradient=attrs["print_gradient"],
                  format=attrs["format"], grad_title=title)]


register(OpDef("print_tensor", same_spec, _print_kernel, grad=_print_grad, view=True, popart_class="PrintTensorOp"))


def print_tensor(t: Tensor, title: Optional[str] = None, print_self: bool = True, print_gradient: bool = False,
                 summarise_threshold: int = 1000, edge_items: int = 3, max_line_width: int = 75,
                 digits: int = 8, float_format: FloatFormat = "auto", separator: str = " ",
                 open_bracket: str = "[", close_bracket: str = "]") -> Tensor:
    """Return ``t`` unchanged and print ``title: values`` to stderr each time the op runs (``title``
    defaults to ``print_`` + the tensor's name). Use the result, as popxl prunes unused ops.

    ``summarise_threshold``, ``edge_items``, ``max_line_width`` and ``separator`` mean what NumPy's
    ``array2string`` options do; ``float_format`` is 'auto' (``digits`` significant digits, in fixed point
    unless the magnitudes call for scientific notation, as Poplar prints), 'fixed' or 'scientific' (``digits``
    decimals) or 'none'. The gradient passes through; with ``print_gradient`` it is printed too.
    """
    expect_tensors("print_tensor", t=t)
    if float_format not in _FLOAT_FORMATS:
        raise ValueError(f"print_tensor: float_format must be one of {', '.join(_FLOAT_FORMATS)}, got "
                         f"{float_format!r}")
    options = {"summarise_threshold": int(summarise_threshold), "edge_items": int(edge_items),
               "max_line_width": int(max_line_width), "digits": int(digits), "float_format": float_format,
               "separator": str(separator), "open_bracket": str(open_bracket),
               "close_bracket": str(close_bracket)}
    return apply("print_tensor", t, name="print_out", title=f"print_{t.name}" if title is None else str(title),
                 print_self=bool(print_self), print_gradient=bool(print_gradient), format=options,
                 grad_title=None)


def titled_gradient(printed: Tensor, grad_title: str) -> Tensor:
    """``printed`` (a print_tensor's output), its gradient to be printed under ``grad_title`` (as
    PopART titles it) rather than the forward title."""
    producer = printed.producer
    if producer is None or not producer.attrs.get("print_gradient"):
        return printed
    producer.attrs["grad_title"] = str(grad_title)
    return printed
