"""Compiles an Ir into per-replica programs and runs them on a simulated IPU system."""
from workbench.ir.device import DEVICE_TYPES, Device, device_for

from .executable import Executable, compile_executable
from .options import ProgressOptions, RunOptions, default_run_options, set_default_run_options
from .session import Session
from .trace import Trace, TraceEvent, TraceSummary
