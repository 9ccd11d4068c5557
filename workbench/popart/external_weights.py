"""``modelToHost`` for models whose weights are stored in separate files (ONNX's external data), as
PopART does it: each such weight is rewritten in place in its file, the optimiser state of such a
weight is added at the end of the same file (once; later saves rewrite it in place), and every file is
found before anything is written. ``relocate`` is ``updateExternallySavedTensorLocations``."""
from __future__ import annotations

import os
import shutil
from typing import Mapping

import numpy as np
import onnx

from workbench.onnx import external_data
from workbench.onnx.external_data import ExternalRef

from .errors import popart_exception
from .reserved import PREFIXES

# The order PopART adds optimiser state to a file: by kind of state, then by weight.
_STATE_ORDER = tuple(PREFIXES[f"reserved{name}Prefix"] for name in ("Accl", "Accl1", "Accl2", "Accl3", "Step",
                                                                     "Accum"))


def _weight_of(state_name: str) -> tuple[int, str]:
    for place, prefix in enumerate(_STATE_ORDER):
        if state_name.startswith(prefix):
            return place, state_name[len(prefix):]
    return len(_STATE_ORDER), ""


def write_external(values: Mapping[str, np.ndarray], refs: dict[str, ExternalRef],
                   state_names: set[str]) -> dict[str, ExternalRef]:
    """Write ``values`` whose tensors are stored externally (``refs``, updated with the state added to
    a weight's file); returns the references of every externally stored tensor written."""
    weights = list(values)
    new_state = sorted((n for n in state_names if n not in refs and _weight_of(n)[1] in refs),
                       key=lambda n: (_weight_of(n)[0], weights.index(_weight_of(n)[1])))
    try:
        for name in [n for n in values if n in refs]:
            external_data.found_path(refs[name].location, name)
        for name, ref in refs.items():
            if name in values:
                external_data.write_back(name, ref, values[name])
        for name in new_state:
            path = external_data.found_path(refs[_weight_of(name)[1]].location, name)
            added = external_data.append({name: values[name]}, path)[name]
            refs[name] = ExternalRef(refs[_weight_of(name)[1]].location, added.offset, added.length)
    except external_data.ExternalDataError as error:
        raise popart_exception(str(error)) from None
    return {name: refs[name] for name in values if name in refs}


def refer(model: onnx.ModelProto, written: Mapping[str, ExternalRef], values: Mapping[str, np.ndarray]) -> None:
    """Make ``model``'s initializers of ``written`` refer to their files (adding the new ones)."""
    present = {init.name: init for init in model.graph.initializer}
    for name, ref in written.items():
        array = np.asarray(values[name])
        proto = external_data.reference(name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape, ref)
        if name in present:
            present[name].CopyFrom(proto)
        else:
            model.graph.initializer.append(proto)


def relocate(refs: dict[str, ExternalRef], source: str, target: str) -> list[str]:
    """Copy the external data file ``source`` to ``target`` and point the tensors stored in it there;
    returns their names."""
    if not os.path.exists(source):
        raise popart_exception(f"Request to update externally saved tensor locations from '{source}' to "
                               f"'{target}', but file '{source}' does not exist")
    moved = [name for name, ref in refs.items() if ref.location == source]
    if not moved:
        raise popart_exception(f"No ONNX model initializers have external location set to '{source}'")
    shutil.copyfile(source, target)
    for name in moved:
        refs[name] = ExternalRef(target, refs[name].offset, refs[name].length)
    return moved
