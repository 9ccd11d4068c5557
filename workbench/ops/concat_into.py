"""A concat along the channel axis whose inputs are computed by convolution runs that write straight into
their stretch of its output, as a fire module's two expanding convolutions do in SqueezeNet: no input
is made as an array of its own and then copied (``runtime/execution/fusion.py`` finds such concats).

The first writer of a run makes the output; each writer's result is a view of its stretch, which only
the concat reads; the concat copies in the inputs that no writer computed and hands the output on. A
concat can itself write into a stretch of another's output (``place_in``): its output is then made
there, by that concat's target. The values are those of the same kernels writing fresh arrays, bit for bit.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from workbench.ir import Op


def writes_into(op: Op) -> bool:
    """A float concat along axis 1 of inputs of two or more axes: each input's stretch of the output is a
    view whose every image is contiguous, which a convolution kernel can write into."""
    return (op.type == "concat" and op.attrs["axis"] == 1 and len(op.outputs[0].shape) >= 2
            and op.outputs[0].dtype.as_numpy() == np.float32)


class ConcatTarget:
    """The output of one concat op for one replica, made once per run by its first writer."""

    __slots__ = ("shape", "dtype", "stretches", "written", "output", "outer")

    def __init__(self, op: Op, written: Sequence[int]):
        if not writes_into(op):
            raise ValueError(f"{op.name} ({op.type}) is no concat along axis 1 that convolutions can write into")
        self.shape = op.outputs[0].shape
        self.dtype = op.outputs[0].dtype.as_numpy()
        starts = np.cumsum([0] + [t.shape[1] for t in op.inputs])
        self.stretches = [(slice(None), slice(int(a), int(b))) for a, b in zip(starts[:-1], starts[1:])]
        self.written = frozenset(written)
        self.output: Optional[np.ndarray] = None
        self.outer: Optional[Callable[[], np.ndarray]] = None

    def place_in(self, destination: Callable[[], np.ndarray]) -> None:
        """Make the output where ``destination()`` says (a stretch of another concat's output) from now on."""
        self.outer = destination

    def _made(self) -> np.ndarray:
        if self.output is None:
            self.output = np.empty(self.shape, self.dtype) if self.outer is None else self.outer()
        return self.output

    def destination(self, position: int) -> Callable[[], np.ndarray]:
        """What the writer of input ``position`` calls for the array to write its result into."""
        if position not in self.written:
            raise ValueError(f"input {position} of the concat is not written by a convolution run")
        stretch = self.stretches[position]

        def destination() -> np.ndarray:
            return self._made()[stretch]
        return destination

    def kernel(self) -> Callable[..., np.ndarray]:
        """The concat's kernel: the output with the other inputs copied in."""
        copied = [(index, stretch) for index, stretch in enumerate(self.stretches) if index not in self.written]

        def concat(*arrays: np.ndarray) -> np.ndarray:
            if self.output is None and self.written:  # its writers make its inputs: they run before it
                raise RuntimeError("a concat ran before the convolutions that write into its output")
            output, self.output = self._made(), None
            for index, stretch in copied:
                output[stretch] = arrays[index]
            return output
        return concat
