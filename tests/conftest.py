"""Test-wide settings: every kernel's result is checked against its op's inferred shape and dtype."""
from workbench.runtime.options import default_run_options, set_default_run_options

set_default_run_options(default_run_options().with_changes(check_kernels=True))
