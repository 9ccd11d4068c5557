"""Compiles an Ir into per-replica programs and runs them on a simulated IPU system."""
from workbench.ir.device import DEVICE_TYPES, Device, device_for

from .session import Session
from .trace import Trace, TraceEvent, TraceSummary
