"""Pure functions from an Ir (and run traces) to plain data: schedules, aliasing, checks, the call
tree, the flattened schedule, code and tensor liveness, and memory per IPU."""
from .aliasing import GraphEffects, graph_effects
from .call_tree import CallTree, CallTreeEdge, CallTreeNode, call_tree
from .code_liveness import GraphCodeLiveness, code_liveness
from .flatten import FlatSchedule, Frame, Step, flattened_schedule
from .memory import CapacityProblem, IpuMemory, MemoryReport, memory
from .schedule import ScheduleError, schedule
from .tensor_liveness import Allocation, StepMemory, TensorLiveness, tensor_liveness
from .verify import InvalidIrError, verify
