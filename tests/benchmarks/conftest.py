"""Benchmarks measure the plain runtime, without the test suite's kernel checks."""
import os

os.environ["WORKBENCH_CHECK_KERNELS"] = "0"
