"""The training half of ``popart``'s names: sessions, losses and optimisers."""
from .losses import L1Loss, Loss, NllLoss
from .optimizers import (SGD, Adam, Adaptive, AdaptiveMode, AdamMode, ClipNormSettings, ConstSGD, DataType, Optimizer,
                         OptimizerValue, SGDAccumulatorAndMomentum, WeightDecayMode)
from .training import TrainingSession

__all__ = ["L1Loss", "Loss", "NllLoss", "SGD", "Adam", "Adaptive", "AdaptiveMode", "AdamMode", "ClipNormSettings", "ConstSGD", "DataType", "Optimizer",
           "OptimizerValue", "SGDAccumulatorAndMomentum", "WeightDecayMode", "TrainingSession"]
