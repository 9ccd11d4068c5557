"""Pure functions from an Ir (and run traces) to plain data: schedules, aliasing, checks."""
from .aliasing import GraphEffects, graph_effects
from .schedule import ScheduleError, schedule
from .verify import InvalidIrError, verify
