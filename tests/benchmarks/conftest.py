"""Benchmarks measure the plain runtime, without the test suite's kernel checks."""
from workbench.runtime.options import default_run_options, set_default_run_options

set_default_run_options(default_run_options().with_changes(check_kernels=False))
