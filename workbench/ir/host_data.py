"""Conversion of host values (scalars, lists, arrays) into NumPy arrays of a popxl dtype."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import dtypes, float8

downcast_np_dtypes = dict(dtypes.DOWNCAST)


def to_numpy(data: Any, dtype: Optional[dtypes.dtype] = None, downcast: bool = True,
             copy: bool = True, log2_scale: Optional[int] = None,
             nan_on_overflow: Optional[bool] = None) -> np.ndarray:
    """Return ``data`` as an ndarray: of ``dtype`` if given, else its own type with 64-bit types
    narrowed to 32 bits when ``downcast`` is set. Numbers given for a float8 ``dtype`` are encoded
    as ``data * 2**log2_scale`` (default 0), NaN on overflow unless ``nan_on_overflow=False``."""
    data = detached(data)
    if dtype is not None:
        dtype = dtypes.dtype.as_dtype(dtype)
        array = np.array(data, copy=copy) if isinstance(data, np.ndarray) else np.asarray(data)
        if array.dtype != dtype.as_numpy() and dtype in float8.FORMATS:
            codes = float8.encode(array, dtype, float8.check_log2_scale(log2_scale or 0),
                                  nan_on_overflow is not False)
            return float8.from_codes(codes, dtype)
        if array.dtype != dtype.as_numpy():
            _check_representable(array, dtype)
            array = array.astype(dtype.as_numpy())
        return array
    array = np.array(data, copy=copy) if isinstance(data, np.ndarray) else np.asarray(data)
    if array.dtype.kind in "OSU":
        raise TypeError(f"cannot make a tensor from {type(data).__name__} data {data!r}: "
                        "expected numbers, lists of numbers or a NumPy array")
    if downcast and array.dtype in downcast_np_dtypes:
        array = array.astype(downcast_np_dtypes[array.dtype])
    return array


def _check_representable(array: np.ndarray, target: dtypes.dtype) -> None:
    if target.is_int and array.dtype.kind == "f" and array.size and not np.all(np.isfinite(array)):
        raise ValueError(f"non-finite values cannot be converted to {target!r}")


def detached(data: Any) -> Any:
    """A torch tensor as a NumPy array (detached first, as popxl does, so tensors that require grad
    are accepted); any other value unchanged."""
    if type(data).__module__.startswith("torch"):
        return data.detach().cpu().numpy()
    return data


def host_array(data: Any) -> np.ndarray:
    """``data`` (an array, a torch tensor, numbers) as an ndarray, without copying an ndarray."""
    return np.asarray(detached(data))


def memmap_data(data: np.memmap, dtype: Optional[dtypes.dtype], downcast: bool) -> np.memmap:
    """A memory-mapped array kept as it is, so the device's values are written back into it: it
    must be C-ordered, aligned and already of the variable's dtype (the checks and wording are popxl's)."""
    if dtype is not None and dtypes.dtype.as_dtype(dtype).as_numpy() != data.dtype:
        raise ValueError("When passing a memory-mapped NumPy array, the `dtype` parameter must be None or the same "
                         f"as the array's dtype: the array has {data.dtype}, the variable was asked for {dtype!r}")
    if not (data.flags.c_contiguous and data.flags.aligned):
        raise ValueError("When passing a memory-mapped NumPy array, it must already be in C-ordered and aligned "
                         "form: the variable is read from and written back into the array in place")
    if downcast and data.dtype in downcast_np_dtypes:
        raise ValueError(f"When passing a memory-mapped NumPy array, the dtype {dtype} is not supported, as "
                         f"it requires downcasting the array's {data.dtype} into a new array: map the file with dtype "
                         f"{np.dtype(downcast_np_dtypes[data.dtype])} (or pass downcast=False)")
    return data


def variable_data(data: Any, dtype: Optional[dtypes.dtype] = None, downcast: bool = True,
                  log2_scale: Optional[int] = None, nan_on_overflow: Optional[bool] = None) -> np.ndarray:
    """A variable's initial value: an np.memmap kept as it is (``memmap_data``), anything else
    converted by ``to_numpy``."""
    if isinstance(data, np.memmap):
        return memmap_data(data, dtype, downcast)
    return to_numpy(data, dtype, downcast, log2_scale=log2_scale, nan_on_overflow=nan_on_overflow)
