"""The x of every node of a picture with frames (expanded calls, opened groups), packed in pixels so that each
node's label has room and each frame holds its members alone: a frame is a block as wide as its widest row of
members, and the blocks and nodes of each frame (and of the picture) are set left to right in the order the
layered layout gave them, each as far left as the rows it spans allow, as pieces fall in a game of Tetris.
The picture's own nodes beside its frames in a layer, where too many for the width, wrap into rows of their own
(``wrapping``); where the frames alone are too wide, the longest labels of the layers that make them so are cut
first, the least that fits, down to their names (``FLOOR``); then a frame's own nodes (or the picture's between
two frames) wrap into rows as the picture's do (``picture_wrapping``), and only where none can are labels cut further. Edges are then routed through the rows they pass at lanes clear of nodes and labels (``RowRouter``), and the rows are set
apart where frames end or begin, so that frames stacked one on another do not touch and titles cover nothing."""
from __future__ import annotations

from collections import defaultdict
from typing import Hashable, Optional

from workbench.export.layered import Layout
from workbench.export.wrapping import band_rows, wrap_rows

from ..dataflow import DataflowPicture, PictureBox
from .picture_blocks import Block, frame_box
from .picture_frames import BOX_STEP, FRAME_NEST, FRAME_PAD, layer_pixels
from .picture_labels import CHAR_WIDTH, LABEL_GAP, MARGIN, PackedLayout, Sizes, drawn_label, label_width
from .picture_nesting import box_owners, box_parents
from .picture_wrapping import wrap_frame
from .row_routes import RowRouter

COLUMN = 24  # pixels per column while the picture fits: full-size markers
HALF = Sizes(COLUMN).call / 2  # pixels from a node's centre to its marker's side
GAP = 20  # pixels between two neighbours of a row (room for an edge's lane between them)
LANE_PITCH, LANE_CLEARANCE = 6, 2  # edges pass a row at points of one grid, clear of each node and label
SIDE_CLEARANCE = 7  # pixels: and clear of each frame's sides
CUTS = (None, 32, 24, 18, 14, 12, 10)  # most characters of a label, tried in turn in the layers too wide
LONGEST = 4  # characters: the labels this near the longest of those that widen a layer too wide are cut first
LABEL_HEIGHT = 12  # pixels of a frame's title and of a label
FLOOR = 32  # characters: labels are cut to no fewer (nor their names) before a frame's nodes wrap into rows


def _caption(node, most: Optional[int]) -> str:
    """``node``'s label cut to ``most`` characters, or whole where ``most`` is None."""
    return node.caption if most is None else drawn_label(node, most)


def pack_frames(layout: Layout, picture: DataflowPicture, width: int) -> PackedLayout:
    """The packed layout of ``picture`` (with boxes), from the layers and in-layer order of ``layout``."""
    band = width - 2 * MARGIN - 2 * LANE_PITCH
    layer = {key: round(-y) for key, (x, y) in layout.positions.items()}
    tree = _tree(picture, layout, layer)
    levels = {key: _levels(node) for key, node in picture.nodes.items()}  # each label's most characters, in turn
    cuts = dict.fromkeys(picture.nodes, 0)  # each node's label: the index in its levels of its most characters
    floors = {key: _floor(node) for key, node in picture.nodes.items()}
    refused: set = set()  # (frame, layer, way): wrapping its nodes there changes nothing or turns an edge upwards
    while True:  # ends: each wrap adds a row (no more rows than nodes), each cut between them shortens a label
        captions = {key: _caption(node, levels[key][cuts[key]]) for key, node in picture.nodes.items()}
        extents = {key: HALF + (2 * LABEL_GAP + 1 + label_width(text) * CHAR_WIDTH if text else 2)
                   for key, text in captions.items()}
        _size(tree, extents, layer, picture)
        rows, xs, ends = _rows(tree, extents, layer, picture, band)
        over = {number for number, end in ends.items() if end > band}
        if not over:
            break
        widening = _widening(tree, over, layer)
        shorter = [key for key in widening
                   if cuts[key] < len(levels[key]) - 1 and _above(levels[key][cuts[key] + 1], floors[key])]
        if not shorter:
            cells = {key: HALF + 2 + extent for key, extent in extents.items()}
            wrapped = wrap_frame(tree, over, max(ends[number] for number in over) - band, cells, layer, picture,
                                 refused)
            if wrapped is not None:  # the frame's labels cut for its rows as they were may have room in the new ones
                layer, moved = wrapped
                cuts.update(dict.fromkeys(moved, 0))
                refused.clear()  # its layers are numbered anew
                tree = _tree(picture, layout, layer)
                continue
            shorter = [key for key in widening if cuts[key] < len(levels[key]) - 1]
        if not shorter:
            break
        longest = max(label_width(captions[key]) for key in shorter)  # the longest labels first
        shorter = [key for key in shorter if label_width(captions[key]) >= longest - LONGEST]
        for key in shorter:
            cuts[key] += 1
    blocked: dict[int, list[tuple[float, float]]] = defaultdict(list)  # row -> pixels no edge may pass it at
    for key, row in rows.items():
        blocked[row].append((xs[key] - HALF - LANE_CLEARANCE, xs[key] + extents[key] + HALF + LANE_CLEARANCE))
    _block_sides(tree, 0.0, rows, blocked)
    return _finished(picture, captions, extents, rows, xs, blocked, band, width)


def _levels(node) -> list[Optional[int]]:
    """The most characters of ``node``'s label a line, tried in turn (``CUTS``): for a group whose caption is longer
    than the first cut, first as wide as its caption in two lines (its name, and what it holds) where that is less."""
    if node.kind != "group":
        return list(CUTS)
    two_lines = label_width(drawn_label(node, max(len(node.label) + 1, len(node.caption) - len(node.label) - 2)))
    if not CUTS[1] < two_lines < len(node.caption):
        return list(CUTS)
    return [None, two_lines, *CUTS[1:]]


def _floor(node) -> int:
    """Characters of ``node``'s label cut no shorter while a frame can wrap its nodes into rows instead: a group's
    name and count, an op's type and attributes (not its weight), a tensor's name, each up to ``FLOOR`` of them."""
    if node.kind == "group":
        return min(len(node.label), FLOOR)
    return min(len(node.caption.split(" · ")[0]), FLOOR)


def _above(most: Optional[int], floor: int) -> bool:
    return most is None or most >= floor


def _widening(block: Block, layers: set, layer: dict) -> list:
    """The nodes that make ``layers`` of ``block`` as wide as they are: its own nodes there, and in each frame
    there, those of the frame's widest layers."""
    found = []
    for child in block.children:
        if not isinstance(child, Block):
            if layer[child] in layers:
                found.append(child)
        elif any(child.low <= number <= child.high for number in layers):
            widest = max(child.skyline.values(), default=0.0)
            found += _widening(child, {number for number, end in child.skyline.items() if end >= widest - 0.5}, layer)
    return found


def _tree(picture: DataflowPicture, layout: Layout, layer: dict) -> Block:
    """The blocks of the picture's boxes nested as the boxes are, each block's children in the order of their
    mean column in ``layout``."""
    root = Block(None)
    blocks = [Block(box) for box in picture.boxes]
    owner, parents = box_owners(picture), box_parents(picture)
    columns: dict = {}
    for key in picture.nodes:
        if key in layout.positions:
            (root if owner.get(key) is None else blocks[owner[key]]).children.append(key)
            columns[key] = layout.positions[key][0]
    for block, parent in zip(blocks, parents):
        keys = [key for key in frame_box(block).members if key in layout.positions]
        if not keys:
            continue
        (root if parent is None else blocks[parent]).children.append(block)
        columns[id(block)] = sum(layout.positions[key][0] for key in keys) / len(keys)
        block.low, block.high = min(layer[key] for key in keys), max(layer[key] for key in keys)
    for block in [root, *blocks]:
        block.children.sort(key=lambda child: columns[id(child) if isinstance(child, Block) else child])
    return root


def _pad(box: PictureBox, deepest: int) -> float:
    """Pixels between a frame's side and its block's side: the frame's own padding, as ``frame_extents`` pads."""
    return FRAME_PAD + FRAME_NEST * (deepest - box.depth) + 2


def _size(block: Block, extents: dict, layer: dict, picture: DataflowPicture) -> None:
    """Places each child of ``block`` (and of the blocks in it, first) as far left as the rows it spans allow,
    and sets the block's width; the picture's own nodes before the first or after the last block of their layer
    are kept apart (``tails``), to be set out by ``_rows``."""
    deepest = max(box.depth for box in picture.boxes)
    skyline: dict[int, float] = defaultdict(float)
    block.x, block.tails = {}, {}
    first_block: dict[int, int] = {}  # layer -> the first and the last child block spanning it
    last_block: dict[int, int] = {}
    for index, child in enumerate(block.children):
        if isinstance(child, Block):
            for row in range(child.low, child.high + 1):
                first_block.setdefault(row, index)
                last_block[row] = index
    for index, child in enumerate(block.children):
        if isinstance(child, Block):
            _size(child, extents, layer, picture)
            low, high, wide, ident = child.low, child.high, child.width, id(child)
        else:
            low = high = layer[child]
            wide, ident = HALF + 2 + extents[child], child
            if block.box is None and not first_block.get(low, -1) < index < last_block.get(low, -1):
                block.tails.setdefault(low, []).append(child)
                continue
        left = max(skyline[row] for row in range(low, high + 1))
        left += GAP if left else 0.0
        block.x[ident] = left
        for row in range(low, high + 1):
            skyline[row] = left + wide
    block.skyline = dict(skyline)
    if block.box is None:
        block.width = max(skyline.values(), default=0.0)
        return
    pad = _pad(block.box, deepest)
    title = len(block.box.label) * CHAR_WIDTH + 8
    block.width = max(max(skyline.values(), default=0.0) + 2 * pad, title)
    block.x = {ident: x + pad for ident, x in block.x.items()}


def _rows(root: Block, extents: dict, layer: dict, picture: DataflowPicture, band: float):
    """Each node's row and centre (pixels) once the picture's tails too wide for ``band`` wrap, and the right end
    of the rows of each layer. A run of layers with no frame wraps by ``band_rows``; the tail of a layer a frame spans
    stays in its row where it fits, else wraps by ``wrap_rows`` into rows above or below it (``_wrap_tail``) or,
    where its frames end there, with the run of free layers below."""
    xs: dict = {}
    _absolute(root, 0.0, xs)
    depth = max(layer.values()) + 1
    spanned = [False] * depth
    for child in root.children:
        if isinstance(child, Block):
            for row in range(child.low, child.high + 1):
                spanned[row] = True
    cells: dict[Hashable, float] = {key: HALF + 2 + extents[key] for key in picture.nodes if key in layer}
    predecessors: dict = defaultdict(list)
    for tail, head, _ in picture.edges:
        predecessors[head].append(tail)
    reached: dict[int, float] = defaultdict(float)  # layer -> where its tail may begin: right of what it holds
    for child in root.children:
        if isinstance(child, Block):
            for number in range(child.low, child.high + 1):
                reached[number] = max(reached[number], root.x[id(child)] + child.width + GAP)
        elif child in root.x:
            reached[layer[child]] = max(reached[layer[child]], root.x[child] + cells[child] + GAP)
    rows: dict = {}
    home: dict[int, int] = {}
    count, start = 0, 0
    while start < depth:
        end = start
        if spanned[start]:
            if not _leads_free_rows(root, start, depth, spanned, cells, reached[start], band):
                count = _wrap_tail(root, start, xs, cells, rows, home, count, reached[start], band)
                start += 1
                continue
            home[start] = count  # its frames end here: its tail wraps with the free layers below, under its row
            count, end = count + 1, start + 1
        while end < depth and not spanned[end]:
            end += 1
        run = [root.tails.get(row, []) for row in range(start, end)]
        placed, lefts = band_rows(run, cells, predecessors, band, GAP)
        for number in range(start, end):
            home.setdefault(number, count)
        for key, row in placed.items():
            rows[key], xs[key] = count + row, lefts[key]
        count += max(placed.values(), default=-1) + 1
        start = end
    ends: dict[int, float] = defaultdict(float)  # layer -> the right end of its rows
    for key in layer:
        if key not in rows:
            rows[key] = home[layer[key]]
        ends[layer[key]] = max(ends[layer[key]], xs[key] + cells[key])
    for child in root.children:
        if isinstance(child, Block):
            for number in range(child.low, child.high + 1):
                ends[number] = max(ends[number], root.x[id(child)] + child.width)
    return rows, {key: xs[key] + HALF + 2 for key in rows}, ends


def _leads_free_rows(root: Block, number: int, depth: int, spanned: list, cells: dict, own: float,
                     band: float) -> bool:
    """Whether the tail of layer ``number`` is too long for the layer's row and every frame spanning the layer
    ends there, with a layer no frame spans below: the tail then wraps with the layers below, as one run."""
    tail = root.tails.get(number, [])
    if not tail or number + 1 >= depth or spanned[number + 1]:
        return False
    return own + sum(cells[key] + GAP for key in tail) - GAP > band


def _wrap_tail(root: Block, number: int, xs: dict, cells: dict, rows: dict, home: dict, count: int, own: float,
               band: float) -> int:
    """Sets out the tail of layer ``number``, which a frame spans, from row ``count``: in the layer's own row right
    of its frames where it fits, else wrapped into rows of their own right of the frames that span this layer
    and the one above (the rows go above the layer's row) or the one below (below it), whichever leaves more
    room; gives the next free row."""
    def right_of(blocks) -> float:
        return max([root.x[id(block)] + block.width + GAP for block in blocks], default=0.0)

    blocks = [child for child in root.children if isinstance(child, Block) and child.low <= number <= child.high]
    tail = root.tails.get(number, [])
    if not tail or own + sum(cells[key] + GAP for key in tail) - GAP <= band:
        home[number] = count
        left = own
        for key in tail:
            rows[key], xs[key] = count, left
            left += cells[key] + GAP
        return count + 1
    above = right_of([block for block in blocks if block.low < number])
    below = right_of([block for block in blocks if block.high > number])
    begin = min(above, below)
    wraps = wrap_rows([cells[key] for key in tail], max(band - begin, 1.0), GAP)
    first = count if above < below else count + 1
    left, last = begin, -1
    for key, row in zip(tail, wraps):
        if row != last:
            left, last = begin, row
        rows[key], xs[key] = first + row, left
        left += cells[key] + GAP
    home[number] = count + max(wraps) + 1 if above < below else count
    return count + max(wraps) + 2


def _absolute(block: Block, left: float, xs: dict) -> None:
    """The left of each node of ``block`` (whose left side is at ``left``) from the picture's left."""
    for child in block.children:
        if isinstance(child, Block):
            _absolute(child, left + block.x[id(child)], xs)
        elif child in block.x:
            xs[child] = left + block.x[child]


def _block_sides(block: Block, left: float, rows: dict, blocked: dict) -> None:
    """Adds to ``blocked`` each frame's sides, in the rows it spans: an edge passing a row there would run along
    the side, as if it were part of it."""
    for child in block.children:
        if isinstance(child, Block):
            start = left + block.x[id(child)]
            members = [rows[key] for key in frame_box(child).members if key in rows]
            for row in range(min(members), max(members) + 1):
                blocked[row] += [(start - SIDE_CLEARANCE, start + SIDE_CLEARANCE),
                                 (start + child.width - SIDE_CLEARANCE, start + child.width + SIDE_CLEARANCE)]
            _block_sides(child, start, rows, blocked)


def _finished(picture: DataflowPicture, captions: dict, extents: dict, rows: dict, xs: dict, blocked: dict,
              band: float, width: int) -> PackedLayout:
    """The layout in columns: edges routed through the rows they pass (clear of ``blocked``), rows set apart where
    frames end or begin."""
    count = max(rows.values()) + 1
    right = max(xs[key] + extents[key] for key in xs)
    lanes: list[list[float]] = []
    reach = int(max(band, right + 2 * GAP))
    for row in range(count):
        lanes.append([pixels / COLUMN - 0.5 for pixels in range(LANE_PITCH, reach, LANE_PITCH)
                      if not any(low < pixels < high for low, high in blocked[row])])
    positions = {key: (xs[key] / COLUMN - 0.5, -float(rows[key])) for key in rows}
    router = RowRouter(lanes)
    drawn: list[tuple[Hashable, Hashable]] = list(dict.fromkeys(
        (tail, head) for tail, head, _ in picture.edges if tail in positions and head in positions))
    for tail, head in drawn:
        router.route(tail, [positions[tail], positions[head]])
    bends: dict[tuple[Hashable, Hashable], list[tuple[float, float]]] = {
        edge: route[1:-1] for edge, route in zip(drawn, router.rerouted()) if len(route) > 2}
    heights, top = _row_heights(picture, rows, count)
    ys = [-max(0.0, top - 0.5)]  # the first row low enough for the titles of the frames it begins (the axis ends at 0.5)
    for gap in heights:
        ys.append(ys[-1] - gap)
    positions = {key: (x, ys[int(-y)]) for key, (x, y) in positions.items()}
    bends = {edge: [(x, ys[int(round(-y))]) for x, y in route] for edge, route in bends.items()}
    xs_all = [x for x, _ in positions.values()] + [x for route in bends.values() for x, _ in route]
    plot = width - 2 * MARGIN
    columns = max(plot / COLUMN - 0.5, (right + GAP) / COLUMN)
    return PackedLayout(positions, min(0.0, min(xs_all)), {key: rows[key] for key in rows},
                        bends, int(-ys[-1] + 0.999) + 1, columns, captions)


def _row_heights(picture: DataflowPicture, rows: dict, count: int) -> tuple[list[float], float]:
    """Layers from each row to the next: one, or more where the frames ending above and beginning below
    (``frame_extents``'s padding, and a title above each frame's top) would otherwise touch; and the layers the
    first row takes above it."""
    deepest = max(box.depth for box in picture.boxes)
    pixels = layer_pixels(picture)
    step = BOX_STEP / pixels
    below = [HALF / pixels] * count  # layers taken under each row: a marker, or a frame's bottom padding
    above = [HALF / pixels] * count  # and above it: a marker, or a frame's top padding and its title
    for box in picture.boxes:
        members = [rows[key] for key in box.members if key in rows]
        if not members:
            continue
        nest = deepest - box.depth
        low, high = max(members), min(members)
        below[low] = max(below[low], 0.3 + 0.15 * nest)
        above[high] = max(above[high], 0.3 + step * nest + (LABEL_HEIGHT + 2) / pixels)
    return [max(1.0, below[row] + above[row + 1] + 4 / pixels) for row in range(count - 1)], above[0]
