"""The attributes PopART writes into nodes (``__ipu_number``, ``__pipeline_stage``...), and reading,
writing and removing any attribute of a NodeProto."""
from __future__ import annotations

from typing import Any

import onnx
from onnx import helper

IPU = "__ipu_number"
PIPELINE_STAGE = "__pipeline_stage"
EXECUTION_PHASE = "__execution_phase"
RECOMPUTE = "__recompute_output_in_backward_pass"
AVAILABLE_MEMORY = "__available_memory"
PARTIALS_TYPE = "__partials_type"
SCHEDULE_PRIORITY = "__schedule_priority"
OUTLINE = "__outline"
EXCLUDE_PATTERNS = "__exclude_patterns"
ENABLE_CONV_DITHERING = "__enable_conv_dithering"
DEBUG_INFO_ID = "__debug_info_id"  # the number of the node's popartbuilder DebugInfo


def has(node: onnx.NodeProto, name: str) -> bool:
    return any(a.name == name for a in node.attribute)


def get(node: onnx.NodeProto, name: str) -> Any:
    for attribute in node.attribute:
        if attribute.name == name:
            value = helper.get_attribute_value(attribute)
            if isinstance(value, bytes):
                return value.decode()
            if isinstance(value, list) and value and isinstance(value[0], bytes):
                return [v.decode() for v in value]
            return value
    raise KeyError(f"node {node.name or node.output[0]!r} has no attribute {name!r}")


def remove(node: onnx.NodeProto, name: str) -> None:
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)


def set_attribute(node: onnx.NodeProto, name: str, value: Any) -> None:
    remove(node, name)
    node.attribute.append(helper.make_attribute(name, value))

