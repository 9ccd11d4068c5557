"""Pictures too wide for an output laid out again with their independent parts one under another.

A layered picture puts every box that reads the group's inputs in its first layer: twelve all-reduces of
twelve gradients, or the copies of three layers' weights beside the chain of layers, make a row thousands of
pixels wide. Where a picture is wider than ``WRAP_WIDTH`` and its boxes fall into parts with no edge between
them (``in`` and ``out`` ports aside), the parts keep their own layers and columns and are packed into rows
of at most that width, row under row, as lines of text wrap. The ports move to the right of the rows:
edges from the ``in`` port run down a bus there and turn left into their parts, and edges to the ``out``
port turn right into a second bus beside it, through bends of their own in each layer they cross, so that
none passes through a box (a bus on the left would cost half a column of margin). A tall result is
then folded side by side to the output's width by ``compose``.

It reads and writes the shipped picture (layers, columns and bends), so the notebook and the extension
draw the wrapped picture alike, with nothing to compute in the page (``compose`` draws the columns of a
picture still too wide for its output closer together).
"""
from __future__ import annotations

from .compose import GAP_X, natural_width

WRAP_WIDTH = 520  # pixels: fits a 630-px output with the picture opened two frames deep
BUS = 0.5  # columns between a bus and the parts beside it


def stacked(picture: dict) -> dict:
    """``picture`` with its parts packed into rows where it is wider than ``WRAP_WIDTH`` and has parts to
    pack (else ``picture`` itself)."""
    if natural_width(picture) <= WRAP_WIDTH:
        return picture
    return _stacked(picture)


def _stacked(picture: dict) -> dict:
    """``picture`` with its parts packed into rows (itself where it has one part)."""
    parts = _parts(picture)
    if len(parts) < 2:
        return picture
    nodes, edges = picture["nodes"], picture["edges"]
    part_of = {index: number for number, members in enumerate(parts) for index in members}
    inner = [[edge for edge in edges if edge["to"] >= 0 and part_of.get(edge["from"]) == number]
             for number in range(len(parts))]
    shapes = [_shape(picture, members, inner[number]) for number, members in enumerate(parts)]
    sides = {port["side"] for port in picture["ports"]}
    layer_shift, col_shift = [0] * len(parts), [0.0] * len(parts)
    top = 1 if "in" in sides else 0
    for row in _rows([shape["width"] for shape in shapes]):
        col = 0.0
        for number in row:
            layer_shift[number] = top - shapes[number]["layer"]
            col_shift[number] = col - shapes[number]["col"]
            col += shapes[number]["cols"] + 1
        top += max(shapes[number]["depth"] for number in row)
    depth = top + (1 if "out" in sides else 0)
    new_nodes = [{**node, "layer": node["layer"] + layer_shift[part_of[index]],
                  "col": node["col"] + col_shift[part_of[index]]} for index, node in enumerate(nodes)]
    in_bus = max((node["col"] for node in new_nodes), default=0.0) + BUS
    out_bus = in_bus + BUS
    new_edges = []
    for edge in edges:
        tail, head = edge["from"], edge["to"]
        if tail >= 0:
            number = part_of[tail]
            end = new_nodes[tail]["layer"]
            if head >= 0:
                bends = [[col + col_shift[number], layer + layer_shift[number]] for col, layer in edge["bends"]]
            else:
                bends = [[out_bus, layer] for layer in range(end + 1, depth - 1)]
        else:
            bends = [[in_bus, layer] for layer in range(1, new_nodes[head]["layer"])]
        new_edges.append({**edge, "bends": bends})
    ports = [{**port, "layer": 0 if port["side"] == "in" else depth - 1,
              "col": in_bus if port["side"] == "in" else out_bus} for port in picture["ports"]]
    cols = [node["col"] for node in new_nodes] + [port["col"] for port in ports] + \
        [col for edge in new_edges for col, _ in edge["bends"]]
    return {**picture, "nodes": new_nodes, "ports": ports, "edges": new_edges, "depth": depth, "left": min(cols)}


def _parts(picture: dict) -> list[list[int]]:
    """The boxes in sets joined by edges (ports aside), in reading order: by first layer, then column."""
    nodes = picture["nodes"]
    parent = list(range(len(nodes)))

    def find(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    for edge in picture["edges"]:
        if edge["from"] >= 0 and edge["to"] >= 0:
            parent[find(edge["from"])] = find(edge["to"])
    parts: dict[int, list[int]] = {}
    for index in range(len(nodes)):
        parts.setdefault(find(index), []).append(index)
    return sorted(parts.values(), key=lambda members: min((nodes[i]["layer"], nodes[i]["col"]) for i in members))


def _shape(picture: dict, members: list[int], edges: list[dict]) -> dict:
    """A part's first layer and column, its depth and span in layers and columns, and its width in pixels
    drawn alone."""
    nodes = [picture["nodes"][index] for index in members]
    layers = [node["layer"] for node in nodes] + [layer for edge in edges for _, layer in edge["bends"]]
    cols = [node["col"] for node in nodes] + [col for edge in edges for col, _ in edge["bends"]]
    first, first_col = min(layers), min(cols)
    position = {index: number for number, index in enumerate(members)}
    alone = {"nodes": [{**node, "layer": node["layer"] - first} for node in nodes], "ports": [],
             "edges": [{**edge, "from": position[edge["from"]], "to": position[edge["to"]],
                        "bends": [[col, layer - first] for col, layer in edge["bends"]]} for edge in edges],
             "depth": max(layers) - first + 1, "left": first_col}
    return {"layer": first, "col": first_col, "depth": alone["depth"], "cols": max(cols) - first_col,
            "width": natural_width(alone)}


def _rows(widths: list[float]) -> list[list[int]]:
    """The parts, in order, packed into rows of at most ``WRAP_WIDTH`` pixels less room for the buses."""
    room = WRAP_WIDTH - 2 * GAP_X
    rows: list[list[int]] = []
    used: float = room
    for number, width in enumerate(widths):
        if rows and used + GAP_X + width <= room:
            rows[-1].append(number)
            used += GAP_X + width
        else:
            rows.append([number])
            used = width
    return rows
