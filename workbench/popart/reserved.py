"""PopART's reserved tensor-name prefixes (``popart.reservedAcclPrefix()`` and the rest), from one
table: the optimiser's state and compound scalars, gradients, updated weights, loop and pipeline
tensors. The workbench names the tensors it makes for a training program with these prefixes, so
that a script anchors ``Accl___w`` or ``Gradient___w`` as on PopART."""
from __future__ import annotations

from typing import Callable

PREFIXES: dict[str, str] = {
    "reservedLossScalingPrefix": "lossScaling_",
    "reservedAutomaticLossScalePrefix": "AutomaticLossScaleProxy___",
    "reservedDefaultScaledLearningRate0Prefix": "scaledLearningRate0___default___",
    "reservedSpecificScaledLearningRate0Prefix": "scaledLearningRate0___specific___",
    "reservedDefaultWeightDecayScaleFactor0Prefix": "weightDecayScaleFactor0___default___",
    "reservedSpecificWeightDecayScaleFactor0Prefix": "weightDecayScaleFactor0___specific___",
    "reservedDefaultScaledLearningRate1Prefix": "scaledLearningRate1___default___",
    "reservedSpecificScaledLearningRate1Prefix": "scaledLearningRate1___specific___",
    "reservedDefaultScaledWeightDecay1Prefix": "scaledWeightDecay1___default___",
    "reservedSpecificScaledWeightDecay1Prefix": "scaledWeightDecay1___specific___",
    "reservedDefaultDampeningScaleFactor1Prefix": "dampeningScaleFactor1___default___",
    "reservedSpecificDampeningScaleFactor1Prefix": "dampeningScaleFactor1___specific___",
    "reservedDefaultScaledMomentum1Prefix": "scaledMomentum1___default___",
    "reservedSpecificScaledMomentum1Prefix": "scaledMomentum1___specific___",
    "reservedDefaultScaledLearningRate2Prefix": "scaledLearningRate2___default___",
    "reservedSpecificScaledLearningRate2Prefix": "scaledLearningRate2___specific___",
    "reservedDefaultDampeningScaleFactor2Prefix": "dampeningScaleFactor2___default___",
    "reservedSpecificDampeningScaleFactor2Prefix": "dampeningScaleFactor2___specific___",
    "reservedDefaultScaledMomentum2Prefix": "scaledMomentum2___default___",
    "reservedSpecificScaledMomentum2Prefix": "scaledMomentum2___specific___",
    "reservedDefaultSGDWeightDecayPrefix": "sgdWeightDecay___default___",
    "reservedSpecificSGDWeightDecayPrefix": "sgdWeightDecay___specific___",
    "reservedDefaultSGDMomentumPrefix": "sgdMomentum___default___",
    "reservedSpecificSGDMomentumPrefix": "sgdMomentum___specific___",
    "reservedDefaultNesterovGradScaleFactor1Prefix": "nesterovGradScaleFactor1___default___",
    "reservedSpecificNesterovGradScaleFactor1Prefix": "nesterovGradScaleFactor1___specific___",
    "reservedDefaultNesterovGradScaleFactor2Prefix": "nesterovGradScaleFactor2___default___",
    "reservedSpecificNesterovGradScaleFactor2Prefix": "nesterovGradScaleFactor2___specific___",
    "reservedDefaultNesterovDampeningScaleFactor1Prefix": "nesterovDampeningScaleFactor1___default___",
    "reservedSpecificNesterovDampeningScaleFactor1Prefix": "nesterovDampeningScaleFactor1___specific___",
    "reservedDefaultNesterovDampeningScaleFactor2Prefix": "nesterovDampeningScaleFactor2___default___",
    "reservedSpecificNesterovDampeningScaleFactor2Prefix": "nesterovDampeningScaleFactor2___specific___",
    "reservedDefaultAdamBeta1Prefix": "adamBeta1___default___",
    "reservedSpecificAdamBeta1Prefix": "adamBeta1___specific___",
    "reservedDefaultAdamBeta2Prefix": "adamBeta2___default___",
    "reservedSpecificAdamBeta2Prefix": "adamBeta2___specific___",
    "reservedDefaultLearningRatePrefix": "learningRate___default___",
    "reservedSpecificLearningRatePrefix": "learningRate___specific___",
    "reservedDefaultAdamEpsPrefix": "adamEps___default___",
    "reservedSpecificAdamEpsPrefix": "adamEps___specific___",
    "reservedDefaultWeightDecayPrefix": "weightDecay___default___",
    "reservedSpecificWeightDecayPrefix": "weightDecay___specific___",
    "reservedDefaultAdamGradientScalingPrefix": "adamGradientScaling___default___",
    "reservedSpecificAdamGradientScalingPrefix": "adamGradientScaling___specific___",
    "reservedDefaultMaxWeightNormPrefix": "maxWeightNorm___default___",
    "reservedSpecificMaxWeightNormPrefix": "maxWeightNorm___specific___",
    "reservedDefaultAdaptiveAlphaPrefix": "adaptiveAlpha___default___",
    "reservedSpecificAdaptiveAlphaPrefix": "adaptiveAlpha___specific___",
    "reservedDefaultAdaptiveEpsPrefix": "adaptiveEps___default___",
    "reservedSpecificAdaptiveEpsPrefix": "adaptiveEps___specific___",
    "reservedDefaultAdaptiveGradientScalingPrefix": "adaptiveGradientScaling___default___",
    "reservedSpecificAdaptiveGradientScalingPrefix": "adaptiveGradientScaling___specific___",
    "reservedDefaultAdaptiveMomentumPrefix": "adaptiveMomentum___default___",
    "reservedSpecificAdaptiveMomentumPrefix": "adaptiveMomentum___specific___",
    "reservedAccumPrefix": "Accum___",
    "reservedAcclPrefix": "Accl___",
    "reservedAcclToReducePrefix": "AcclIntoReduce___",
    "reservedAcclToUpdatePrefix": "AcclIntoUpdate___",
    "reservedAcclFinalOutPrefix": "AcclOutOfAcclUpdate___",
    "reservedCounterPrefix": "Counter___",
    "reservedAccl1Prefix": "Accl1___",
    "reservedAccl2Prefix": "Accl2___",
    "reservedAccl3Prefix": "Accl3___",
    "reservedAdamUpdaterPrefix": "AdamUpdater___",
    "reservedAdaptiveUpdaterPrefix": "AdaptiveUpdater___",
    "reservedConcatInitPrefix": "ConcatInit___",
    "reservedConstValuePrefix": "ConstValue___",
    "reservedFinalReducedGradPrefix": "FinalReducedGradient___",
    "reservedGlobalNormPrefix": "GlobalNorm___",
    "reservedGradientPrefix": "Gradient___",
    "reservedIndexPrefix": "Index___",
    "reservedInitPrefix": "Init___",
    "reservedLoopIteratorPrefix": "Iterator___",
    "reservedLambR1SqPrefix": "LambR1Sq___",
    "reservedLambR2SqPrefix": "LambR2Sq___",
    "reservedLoopCondPrefix": "LoopCond___",
    "reservedDefaultLossScalingPrefix": "lossScaling___default___",
    "reservedSpecificLossScalingPrefix": "lossScaling___specific___",
    "reservedLossScalingRatioPrefix": "LossScalingRatio_",
    "reservedPreviousLossScalingPrefix": "PreviousLossScaling_",
    "reservedRandomSeedPrefix": "randomSeed___",
    "reservedSeedModifierPrefix": "randomSeedModifier___",
    "reservedRemoteArgPrefix": "RemoteArg___",
    "reservedRestoredPrefix": "Restored___",
    "reservedStashedPrefix": "Stashed___",
    "reservedStepPrefix": "Step___",
    "reservedDefaultStepPrefix": "step___default___",
    "reservedSpecificStepPrefix": "step___specific___",
    "reservedUpdatedVarPrefix": "UpdatedVar___",
}


def _prefix_function(name: str, prefix: str) -> Callable[[], str]:
    def function() -> str:
        return prefix
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"PopART's reserved prefix {prefix!r}."
    return function


globals().update({name: _prefix_function(name, prefix) for name, prefix in PREFIXES.items()})
__all__ = list(PREFIXES)
