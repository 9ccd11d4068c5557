"""PopART's debug info: ``initializePoplarDebugInfo(filename, format)``, ``DebugInfo(debugContext, layer)``
with ``setValue``, and ``closePoplarDebugInfo()``, which writes every DebugInfo made in between.

The file is Poplar's layout, in JSON or (``"cbor"``) CBOR: ``contexts``, newest first, each with its
``id`` (its place in ``contexts``), ``name``, ``layer``, ``location`` (``fileName``, ``functionName``,
``lineNumber`` of the code that made its DebugContext), ``parentId`` (the id of its parent) and the
values set on it; names are indices into ``stringTable``. Like Poplar's, the collection is one per
process. While it is on, the workbench adds its own: each node the builder adds (layer
``popartbuilder``, as PopART's builder records its API calls) and each op a session lowers the model to
(layer ``popart``, with its ``opid`` and, as ``parentId``, the record of the node it came from), located at
the user's line that caused them.

Every DebugInfo has a number unique in the process (``getId()``), whether or not debug info is being
collected; the builder writes its node's number into the node's ``__debug_info_id`` attribute, as PopART's
does, and a session finds the node's record by it.
"""
from __future__ import annotations

import itertools
import json
import sys
import threading
from pathlib import Path
from typing import Any, Mapping, Optional

import cbor2

from .errors import popart_exception

_FORMATS = ("json", "cbor")


class _Collection:
    """The DebugInfos of one initialize/close span."""

    def __init__(self, filename: str, form: str):
        self.filename, self.form = filename, form
        self.infos: list["DebugInfo"] = []
        self.by_id: dict[int, "DebugInfo"] = {}
        self.lock = threading.Lock()

    def document(self) -> dict:
        strings: dict[str, int] = {}

        def index(text: str) -> int:
            return strings.setdefault(text, len(strings))

        newest_first = list(reversed(self.infos))
        place = {id(info): number for number, info in enumerate(newest_first)}
        contexts = []
        for info in newest_first:
            location = info.context.location
            record: dict[str, Any] = {"id": place[id(info)], "name": index(info.context.own_name),
                                      "layer": info.layer, "location": {"fileName": index(location[0]), "functionName": index(location[1]),
                                                   "lineNumber": location[2]}}
            parent = info.context.parent_info
            if parent is not None and id(parent) in place:
                record["parentId"] = place[id(parent)]
            record.update(info.values)
            contexts.append(record)
        return {"contexts": contexts, "stringTable": list(strings)}


_collection: Optional[_Collection] = None
_numbers = itertools.count(1)  # DebugInfo ids, unique in the process as Poplar's are


def initializePoplarDebugInfo(filename: str, format: str = "json") -> None:  # noqa: A002 - PopART's keyword
    """Start collecting DebugInfos, to be written to ``filename`` as ``format`` ("json" or "cbor")."""
    global _collection
    if format not in _FORMATS:
        raise popart_exception(f"initializePoplarDebugInfo: format {format!r} is not one of {', '.join(_FORMATS)}")
    Path(filename).write_bytes(b"")  # fails now, not at close, when the file cannot be written
    _collection = _Collection(str(filename), format)


def closePoplarDebugInfo() -> None:
    """Write the DebugInfos collected since ``initializePoplarDebugInfo`` and stop collecting."""
    global _collection
    collection, _collection = _collection, None
    if collection is None:
        return
    document = collection.document()
    if collection.form == "json":
        Path(collection.filename).write_text(json.dumps(document), encoding="utf-8")
    else:
        Path(collection.filename).write_bytes(cbor2.dumps(document))


class DebugInfo:
    """``DebugInfo(debugContext, layer)``: what a layer of the program says about one DebugContext;
    ``setValue(name, value)`` adds a field. Recorded while debug info is being collected."""

    def __init__(self, debugContext: Any, layer: str):
        from .debug import DebugContext

        self.context = debugContext if isinstance(debugContext, DebugContext) else DebugContext(str(debugContext))
        self.layer = str(layer)
        self.values: dict[str, str] = {}
        self.number = next(_numbers)
        collection = _collection
        if collection is not None:
            with collection.lock:
                collection.infos.append(self)
                collection.by_id[self.number] = self

    def setValue(self, name: str, value: Any) -> bool:
        if name in ("name", "layer", "location", "parentId"):
            raise popart_exception(f"DebugInfo.setValue: '{name}' is a field of every context; choose another name")
        self.values[str(name)] = str(value)
        return True

    def getId(self) -> int:
        return self.number

    def getPathName(self) -> str:
        return self.context.name


def collecting() -> bool:
    return _collection is not None


def note(name: str, layer: str, values: Mapping[str, Any], parent: Optional[int] = None) -> Optional[DebugInfo]:
    """Record the workbench's own DebugInfo while debug info is collected (at the caller's caller
    outside the workbench), under the DebugInfo numbered ``parent`` where it was collected too."""
    collection = _collection
    if collection is None:
        return None
    from .debug import DebugContext

    parent_info = collection.by_id.get(parent) if parent is not None else None
    context = DebugContext(parent_info, name) if parent_info is not None else DebugContext(name)
    context.location = _user_location()
    info = DebugInfo(context, layer)
    for key, value in values.items():
        info.setValue(key, value)
    return info


def builder_node(name: str, values: Mapping[str, Any]) -> DebugInfo:
    """The ``popartbuilder`` DebugInfo of a node the builder adds, made whether or not debug info is
    being collected (its number goes into the node's ``__debug_info_id``)."""
    from .debug import DebugContext

    context = DebugContext(name)
    context.location = _user_location()
    info = DebugInfo(context, "popartbuilder")
    for key, value in values.items():
        info.setValue(key, value)
    return info


def _user_location() -> tuple[str, str, int]:
    """The innermost frame outside the workbench package (the user's line)."""
    package = str(Path(__file__).resolve().parents[1])
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno
