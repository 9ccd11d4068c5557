"""Helpers the tests share: how to choose a runtime strategy, and the like."""
