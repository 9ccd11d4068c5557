"""The training half of ``popart``'s names: sessions, losses, optimisers and reserved prefixes."""
from .losses import L1Loss, Loss, NllLoss
from .optimizers import (SGD, Adam, AdamMode, ConstSGD, DataType, Optimizer, OptimizerValue,
                         SGDAccumulatorAndMomentum, WeightDecayMode)
from .reserved import (reservedAccl1Prefix, reservedAccl2Prefix, reservedAcclPrefix, reservedLossScalingPrefix,
                       reservedStepPrefix)
from .training import TrainingSession

__all__ = ["L1Loss", "Loss", "NllLoss", "SGD", "Adam", "AdamMode", "ConstSGD", "DataType", "Optimizer",
           "OptimizerValue", "SGDAccumulatorAndMomentum", "WeightDecayMode", "reservedAccl1Prefix",
           "reservedAccl2Prefix", "reservedAcclPrefix", "reservedLossScalingPrefix", "reservedStepPrefix",
           "TrainingSession"]
