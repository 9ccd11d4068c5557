"""Module: a reusable layer whose ``build`` method defines a graph."""
from __future__ import annotations


class Module:
    """Subclass and define ``build(self, *args, **kwargs)``; ``ir.create_graph(module, ...)`` makes a
    graph of it, and graph inputs kept on ``self`` (``self.W = popxl.graph_input(...)``) can be bound at
    call sites with ``inputs_dict={module.W: W}``."""

    def build(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define build(self, ...)")

    def __call__(self, *args, **kwargs):
        return self.build(*args, **kwargs)
