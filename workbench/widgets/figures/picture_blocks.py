"""The frames of a picture as the packing (``picture_packing``) sets them out: each a block of its nodes and of the
blocks of the frames inside it, with its width and where each of them lies in it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..dataflow import PictureBox


@dataclass(slots=True)
class Block:
    """A frame being packed: its box, the blocks and nodes inside it, its first and last layer and its width
    (pixels, its sides included); children's x are from its left side."""

    box: Optional[PictureBox]
    children: list = field(default_factory=list)  # Block or node key
    low: int = 0
    high: int = 0
    width: float = 0.0
    x: dict = field(default_factory=dict)  # child (a block's id or a node key) -> left in pixels
    tails: dict = field(default_factory=dict)  # the picture's: layer -> its nodes beside (not between) the blocks there
    skyline: dict = field(default_factory=dict)  # layer -> the right end of what the block holds there


def frame_box(block: Block) -> PictureBox:
    """The box of a block other than the picture's own (root) block."""
    if block.box is None:
        raise ValueError("the picture's own block has no box")
    return block.box
