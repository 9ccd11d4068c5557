"""Compiles an Ir into per-replica programs and runs them on a simulated IPU system.

The spine is here: ``options`` (how a session runs), ``executable`` (compiling), ``session`` (the popxl
API). The sub-packages hold the rest: ``execution`` (generated code and replica programs),
``replication`` (how replicas run and meet), ``state`` (weights, shared weights, undoing a run),
``tracing`` (traces and progress), ``stepping`` (the stepper) and ``job`` (several instances).
"""
import importlib
import sys

from workbench.ir.device import DEVICE_TYPES, Device, device_for

from .executable import Executable, compile_executable
from .options import ProgressOptions, RunOptions, default_run_options, set_default_run_options
from .session import Session
from .state.host_memory import HostMemoryError
from .tracing.trace import Trace, TraceEvent, TraceSummary

# The modules' earlier paths (``workbench.runtime.communicator``, ...) still import them.
_MOVED = {"compiler": "execution", "plan": "execution", "program": "execution", "binders": "execution",
          "run": "execution", "host_buffers": "execution", "replicas": "replication",
          "communicator": "replication", "turns": "replication", "rendezvous": "replication",
          "weights": "state", "snapshot": "state", "shared_weights": "state", "allocator": "state",
          "trace": "tracing", "trace_store": "tracing", "trace_totals": "tracing", "timeline": "tracing",
          "progress": "tracing", "stepper": "stepping", "stepper_state": "stepping",
          "stepper_threads": "stepping", "interpreter": "stepping", "instances": "job", "mpi": "job",
          "mpi_window": "job"}
for _name, _package in _MOVED.items():
    sys.modules[f"{__name__}.{_name}"] = globals()[_name] = importlib.import_module(f".{_package}.{_name}", __name__)
