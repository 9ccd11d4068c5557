"""Compiling a graph into Python code over bound kernels, and one replica's program that runs it."""
