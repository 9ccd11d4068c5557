"""Pure functions from an Ir (and run traces) to plain data: schedules, aliasing, checks, the call
tree, the flattened schedule and its static timeline, code and tensor liveness, memory per IPU, and
the cost model."""
from .aliasing import GraphEffects, graph_effects
from .call_tree import CallTree, CallTreeEdge, CallTreeNode, call_tree
from .code_liveness import GraphCodeLiveness, code_liveness
from .cost_model import KINDS, op_cycles, op_kind
from .flatten import FlatSchedule, Frame, Step, flattened_schedule
from .memory import CapacityProblem, IpuMemory, MemoryReport, memory
from .schedule import ScheduleError, schedule
from .static_schedule import ScheduledOp, StaticSchedule, sequence_regions, static_schedule
from .tensor_liveness import Allocation, StepMemory, TensorLiveness, tensor_liveness
from .verify import InvalidIrError, verify
