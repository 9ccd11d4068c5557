"""The executable cache: PopART's engine caching for a Session, on disk.

When the Ir's PopART session options turn caching on (``enableEngineCaching`` with a ``cachePath``, or
the ``POPXL_CACHE_DIR`` environment variable) and the device is hardware-compatible (``ipu_hw``), a
Session keys its Ir by a hash of everything that decides the compiled program (graphs, ops and their
attributes, tensor specs, constants' values, streams, replication, host transfers, device and engine
options; not the variables' values, which travel separately) and looks for ``<hash>.popef`` in the
cache folder. A hit logs that the executable was loaded from that file; a miss logs the start of a
compilation and writes the file. The lines are PopART's, under the ``session`` and ``devicex`` modules.

The simulated program is rebuilt in memory either way (compiling it takes no device time); the file
records the hash and the summary of the Ir it was made for, and a file that is not such a record, or
holds another hash than its name says, is ignored as PopART ignores it.
"""
from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from workbench.ir import Graph, Ir, Tensor
from workbench.ir.device import Device

MAGIC = b"IPU-WORKBENCH-EXECUTABLE 1\n"
SUFFIX = ".popef"
_SESSION, _DEVICEX = logging.getLogger("popart.session"), logging.getLogger("popart.devicex")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class CacheSettings:
    """Where the cache is (``path``) and the engine options that take part in the hash."""

    path: Path
    engine_options: dict[str, str]


def cache_settings(ir: Ir, device: Device) -> Optional[CacheSettings]:
    """The Ir's cache settings, or None where the Session compiles without a cache."""
    options = getattr(ir, "_popart_session_options", None)
    engine = {str(k): str(v) for k, v in dict(getattr(options, "engineOptions", None) or {}).items()}
    if options is not None and options.enableEngineCaching:
        path = str(options.cachePath)
    else:
        path = os.environ.get("POPXL_CACHE_DIR", "") if options is None else ""
    if not path:
        return None
    if device.kind != "ipu_hw":
        _SESSION.info("Skipping to load cached PopART executable: user options have disabled it or wrong "
                      "device type.")
        return None
    return CacheSettings(Path(path), engine)


def ir_hash(ir: Ir, device: Device, engine_options: dict[str, str]) -> int:
    """A 64-bit hash of what decides the Ir's program on ``device``."""
    digest = hashlib.blake2b(digest_size=8)
    for line in _description(ir, device, engine_options):
        digest.update(line.encode())
        digest.update(b"\n")
    return int.from_bytes(digest.digest(), "big")


def _description(ir: Ir, device: Device, engine_options: dict[str, str]):
    yield f"device {device.kind} {device.num_ipus}"
    yield f"replication {ir.replication_factor} {ir.instance_replication_factor} transfers {ir.num_host_transfers}"
    yield f"engine {sorted(engine_options.items())}"
    for graph in ir.graphs:
        yield f"graph {graph.name} in {[_tensor(t) for t in graph.inputs]} out {[t.name for t in graph.outputs]}"
        for variable in graph.variables:
            yield (f"variable {_tensor(variable)} {variable.replica_grouping!r} {variable.retrieval_mode} "
                   f"{variable.shard_count} {variable.remote_offset}")
        for constant in graph.constants:
            yield f"constant {_tensor(constant)} {_canonical(np.asarray(constant.data))}"
        for op in graph.ops:
            yield (f"op {op.type} {op.name} {[t.name for t in op.inputs]} {[_tensor(t) for t in op.outputs]} "
                   f"{_canonical(op.attrs)} {[g.name for g in op.called_graphs]} {op.ipu} {op.tile_set} "
                   f"{op.modified} {sorted(op.aliases.items())} {[o.name for o in op.after]}")
    for buffer in ir.remote_buffers:
        yield f"remote {buffer.entries} {buffer.tensor_shape} {buffer.tensor_dtype}"


def _tensor(tensor: Tensor) -> str:
    return f"{tensor.name}:{tensor.spec}@{tensor.ipu}"


def _canonical(value: Any) -> str:
    """A text of ``value`` that is the same in every process (no object addresses)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_canonical(k)}: {_canonical(v)}" for k, v in
                               sorted(value.items(), key=lambda item: str(item[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_canonical(v) for v in value) + "]"
    if isinstance(value, np.ndarray):
        return f"array({value.dtype}, {value.shape}, {hashlib.blake2b(value.tobytes(), digest_size=8).hexdigest()})"
    if isinstance(value, (Tensor, Graph)):
        return value.name
    if isinstance(value, enum.Enum):
        return str(value)
    return _ADDRESS.sub("", repr(value))


def _record(path: Path) -> Optional[int]:
    """The hash a cache file was written for, or None (logged) where it is no executable of ours."""
    _preload(path)
    try:
        with open(path, "rb") as file:
            head = file.read(len(MAGIC))
            body = file.read() if head == MAGIC else b""
        found = int(json.loads(body)["hash"]) if body else None
    except (OSError, ValueError, KeyError, TypeError) as error:
        _SESSION.log(5, f"Ignoring invalid cache file {path}: {error}")
        return None
    if found is None:
        _SESSION.info(f"Ignoring cache file because it does not contain a valid PopART executable : {path}")
        return None
    _SESSION.info(f"PopART cache file has been found: {path}")
    return found


def _preload(path: Path) -> None:
    """PopART's ``POPART_PRELOAD_POPEF=full-preload``: read the whole file once before opening it."""
    if os.environ.get("POPART_PRELOAD_POPEF") != "full-preload" or path.suffix != SUFFIX:
        return
    _SESSION.debug(f"Performing preload of popef file {path}")
    try:
        with open(path, "rb") as file:
            while file.read(1 << 20):
                pass
    except OSError as error:
        _SESSION.warning(f"Error executing preload of file {path}, where POPART_PRELOAD_POPEF env var has value "
                         f"full-preload. Error msg: {error}")
        return
    _SESSION.debug(f"Completed preload of popef file {path}")


def _entries(folder: Path) -> dict[int, Path]:
    """The cache files of ``folder`` by hash: from a name of digits, else from the file's record."""
    entries: dict[int, Path] = {}
    if not folder.is_dir():
        return entries
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        if path.suffix == SUFFIX and path.stem.isdigit():
            _SESSION.info(f"PopEF file inferred to have hash '{int(path.stem)}' has been found: {path}")
            entries[int(path.stem)] = path
            continue
        found = _record(path)
        if found is not None:
            entries[found] = path
    return entries


def lookup(settings: CacheSettings, key: int) -> bool:
    """Whether the cache holds a valid executable for ``key``; logs as PopART does either way."""
    path = _entries(settings.path).get(key)
    if path is None:
        _SESSION.debug("Skipping to load cached PopART executable: no hash match")
        return False
    if _record(path) != key:
        _SESSION.warning("Cache file hash did not match the IR hash, ignoring false cache hit.")
        return False
    _SESSION.info(f"Loading serialized PopART executable from {path}")
    return True


def store(settings: CacheSettings, key: int, ir: Ir) -> Path:
    """Write the cache file for ``key``."""
    settings.path.mkdir(parents=True, exist_ok=True)
    path = settings.path / f"{key}{SUFFIX}"
    summary = {"hash": key, "graphs": {g.name: len(g.ops) for g in ir.graphs}}
    _DEVICEX.info(f"Saving serialized Executablex to {path}")
    path.write_bytes(MAGIC + json.dumps(summary).encode())
    return path
