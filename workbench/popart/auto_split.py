"""``VirtualGraphMode.Auto``: the IPU of each node of a model, by PopART's rule of splitting the model's
weight bytes evenly (or by ``virtualGraphSplitRatios``) over the IPUs.

The nodes fall into chains: each consumer of a model input starts one, and a node joins the chain of
the node whose output it reads first (unless that output already went to another chain with work in
it: then the node starts a chain of its own). A chain can be cut after a node once every node its
earlier nodes feed has come: the cost of the chain up to there is a cut point. IPU k (of n) takes the
chains up to the cumulative cost k/n of the whole, cutting the chain that crosses that cost at its cut
point nearest to it. A node's cost is the bytes of the weights and constants it reads (twice with
gradient accumulation, which keeps a second copy of each weight).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from workbench.onnx.model import GraphBuilder

from .errors import popart_exception


@dataclass
class _Chain:
    cost: float = 0.0
    waiting: set[int] = field(default_factory=set)  # nodes (by index) still to come
    cuts: dict[float, int] = field(default_factory=dict)  # chain cost up to a cut point -> the node it follows
    chosen: set[int] = field(default_factory=set)  # nodes after which the next IPU starts
    ipu: int = 0
    was_cut: bool = False

    def nearest_cut(self, cost: float) -> Optional[int]:
        """Take the cut point whose cost is nearest ``cost`` (among the first at or above it and the one
        before that); None when every cut point costs less."""
        ordered = sorted(self.cuts)
        above = next((i for i, c in enumerate(ordered) if c >= cost), None)
        if above is None:
            return None
        best = ordered[above]
        if above > 0 and cost - ordered[above - 1] < best - cost:
            best = ordered[above - 1]
        return self.cuts.pop(best)


def auto_ipus(builder: GraphBuilder, num_ipus: int, ratios: Sequence[float] = (),
              weight_factor: float = 1.0) -> list[int]:
    """The IPU of each of ``builder.nodes`` for a split over ``num_ipus`` IPUs."""
    nodes = builder.nodes
    if num_ipus <= 1 or not nodes:
        return [0] * len(nodes)
    _check_ratios(ratios, num_ipus)
    consumers: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        for name in node.input:
            consumers.setdefault(name, []).append(index)
    chains, chain_of = _chains(builder, consumers, weight_factor)
    total = sum(chain.cost for chain in chains)
    ipu = _assign(chains, total, num_ipus, ratios)
    if ipu != num_ipus - 1:
        raise popart_exception(f"[AutoVirtualGraph] Couldn't find enough splits for {num_ipus} IPUs. Only found {ipu}")
    placed = []
    for index in range(len(nodes)):
        chain = chains[chain_of[index]]
        placed.append(chain.ipu)
        if index in chain.chosen:
            chain.ipu += 1
    return placed


def _chains(builder: GraphBuilder, consumers: dict[str, list[int]],
            weight_factor: float) -> tuple[list[_Chain], dict[int, int]]:
    chains: list[_Chain] = []
    chain_of: dict[int, int] = {}

    def start(index: int) -> int:
        chains.append(_Chain(waiting={index}))
        chain_of[index] = len(chains) - 1
        return chain_of[index]

    for name in builder.inputs:
        if name not in builder.values:  # a streamed input, not a weight
            for index in consumers.get(name, []):
                start(index)
    for index, node in enumerate(builder.nodes):
        chain_id = chain_of[index] if index in chain_of else start(index)
        chain = chains[chain_id]
        cost = weight_factor * sum(float(np.asarray(builder.values[n]).nbytes) for n in set(node.input)
                                   if n in builder.values)
        chain.cost += cost
        if index in chain.waiting:
            chain.waiting.discard(index)
            if not chain.waiting:
                chain.cuts.setdefault(chain.cost, index)
        for output in node.output:
            for reader in consumers.get(output, []):
                other = chain_of.get(reader)
                if other is None:
                    chain_of[reader] = chain_id
                    chain.waiting.add(reader)
                elif other != chain_id:
                    if chains[other].waiting == {reader} and chains[other].cost == 0.0:
                        chains[other].waiting.discard(reader)
                        chain.waiting.add(reader)
                        chain_of[reader] = chain_id
                    else:
                        chains.append(_Chain(waiting={reader}))
                        chain_of[reader] = len(chains) - 1
    return chains, chain_of


def _assign(chains: list[_Chain], total: float, num_ipus: int, ratios: Sequence[float]) -> int:
    """Give each chain its first IPU and choose its cuts; returns the last IPU given."""
    ipu, position, done, share = 0, 0, 0.0, 0.0
    for k in range(1, num_ipus + 1):
        share = share + ratios[k - 1] if ratios else k / num_ipus
        budget = share * total
        last = k == num_ipus
        while position < len(chains):
            chain = chains[position]
            over = chain.cost > 0 and chain.cost + done > budget
            ends_here = chain.cost + done - budget == 0.0
            if over and not last:
                cut = chain.nearest_cut(budget - done)
                if cut is not None:
                    chain.chosen.add(cut)
                    if not chain.was_cut:
                        chain.ipu = ipu
                    chain.was_cut = True
                    ipu += 1
                    break
                ends_here = True
            done += chain.cost
            position += 1
            if not chain.was_cut:
                chain.ipu = ipu
            if ends_here and not last and position != len(chains):
                ipu += 1
                break
    return ipu


def _check_ratios(ratios: Sequence[float], num_ipus: int) -> None:
    if not ratios:
        return
    if len(ratios) != num_ipus:
        raise popart_exception("The size of virtualGraphSplitRatios must be equal to num_ipus.")
    if any(r <= 0 or r >= 1 for r in ratios):
        raise popart_exception("virtualGraphSplitRatios[i] must be in the rage (0, 1).")
    if abs(sum(ratios) - 1.0) > 1e-6:
        raise popart_exception(f"Sum of virtualGraphSplitRatios[i] must be equal to 1.0, but found {sum(ratios)}.")
