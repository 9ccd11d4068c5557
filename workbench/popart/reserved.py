"""PopART's reserved prefixes of the optimiser's tensors (anchor ``Accl___w`` to read a velocity)."""
from .optimizer_steps import FIRST_MOMENT, SECOND_MOMENT, STEP, VELOCITY
from .training_program import LOSS_SCALING


def reservedAcclPrefix() -> str:
    return VELOCITY


def reservedAccl1Prefix() -> str:
    return FIRST_MOMENT


def reservedAccl2Prefix() -> str:
    return SECOND_MOMENT


def reservedStepPrefix() -> str:
    return STEP


def reservedLossScalingPrefix() -> str:
    return LOSS_SCALING.split("_")[0] + "_"
