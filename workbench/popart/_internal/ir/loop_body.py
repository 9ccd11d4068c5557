"""A graph between a repeat and the graph it runs, made when that graph must return more than the loop carries.

PopART's LoopOp runs a wrapper graph that calls the repeated graph (popxl builds it so), and code written
for PopART edits that structure: it marks a new output on the repeated graph, gives the wrapper's CallOp the
matching output and carries it in place of an old one (``LoopOp.addLoopOutput``). A workbench repeat runs its
graph directly, so the wrapper is made here, when first needed; the program computes what it computed.
"""
from __future__ import annotations

from workbench.ir import Graph, Op, graph_output, ipu, op_edits
from workbench.ops.call_binding import call_binding
from workbench.ops.control_flow import call_with_info


def wrap_loop_body(repeat: Op) -> Graph:
    """Make ``repeat`` run a new graph that takes its inputs, calls the graph it ran with them and returns
    that graph's carried outputs; returns the new graph."""
    body = repeat.called_graphs[0]
    binding = call_binding(repeat, body)
    wrapper = body.ir.create_empty_graph(f"{body.name}__loop_wrapper")
    inputs = []
    for position, index in enumerate(binding.order):
        source = body.inputs[index]
        by_ref = body.is_by_ref_input(source) or position in repeat.modified
        inputs.append(wrapper.append_input(source.name, source.spec, source.ipu, source.tile_set, by_ref))
    with wrapper, ipu(repeat.ipu):
        call = call_with_info(body, inputs_dict={body.inputs[i]: t for i, t in zip(binding.order, inputs)})._op
        for tensor in call.outputs[:len(repeat.outputs)]:
            graph_output(tensor)
    written = {call_binding(call, body).op_input_index(binding.order[p]) for p in repeat.modified}
    if not written <= set(call.modified):
        call.modified = tuple(sorted(set(call.modified) | written))
        wrapper.ir.events.emit("op_changed", call)
    repeat.attrs["graph_inputs"] = tuple(range(len(inputs)))
    op_edits.set_called_graph(repeat, 0, wrapper)
    return wrapper
