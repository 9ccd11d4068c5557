"""Test-wide settings: every kernel's result is checked against its op's inferred shape and dtype."""
import os

os.environ.setdefault("WORKBENCH_CHECK_KERNELS", "1")
