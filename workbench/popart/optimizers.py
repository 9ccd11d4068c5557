"""PopART's optimisers as descriptions: hyperparameters per weight, each constant or changeable.

A session compiles an optimiser into its program (``optimizer_steps``); constant values become
numbers in the program, the others scalar variables that ``updateOptimizerFromHost`` rewrites.

>>> opt = popart.SGD({"defaultLearningRate": (0.1, False), "defaultMomentum": (0.9, True)})
>>> opt.insertSpecific("w0", {"learningRate": (0.01, False)})
"""
from __future__ import annotations

import enum
from typing import Any, Mapping, Optional, Sequence, Union

from .errors import popart_exception
from .tensorinfo import DataType


class OptimizerValue:
    """A hyperparameter value and whether it is constant (compiled in) or can change between runs."""

    __slots__ = ("_value", "_const")

    def __init__(self, val: float = 0.0, isConst: bool = True):
        self._value = float(val)
        self._const = bool(isConst)

    def val(self) -> float:
        return self._value

    def isConst(self) -> bool:
        return self._const

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OptimizerValue) and (self._value, self._const) == (other._value, other._const)

    def __hash__(self) -> int:
        return hash((self._value, self._const))

    def __repr__(self) -> str:
        return f"OptimizerValue({self._value}, {self._const})"


def optimizer_value(value: Any, what: str) -> OptimizerValue:
    """An OptimizerValue from ``(value, isConst)``, an OptimizerValue or a number (constant)."""
    if isinstance(value, OptimizerValue):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return OptimizerValue(float(value[0]), bool(value[1]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return OptimizerValue(float(value), True)
    raise TypeError(f"{what}: expected a (value, isConst) pair, got {value!r}")


class SGDAccumulatorAndMomentum(enum.Enum):
    Combined = 0
    Separate = 1


class AdamMode(enum.Enum):
    Adam = 0
    AdamNoBias = 1
    AdaMax = 2
    Lamb = 3
    LambNoBias = 4


class AdaptiveMode(enum.Enum):
    AdaGrad = 0
    RMSProp = 1
    CenteredRMSProp = 2
    AdaDelta = 3


class WeightDecayMode(enum.Enum):
    Decay = 0
    L2Regularization = 1


class ClipNormSettings:
    """Gradient clipping by global norm: before the optimiser step, the gradients of ``weightIds`` (or of
    every weight) are scaled by ``maxNorm / max(maxNorm, their global norm)``, the global norm being the
    square root of the sum of their squares (``gradient_clipping`` adds the ops)."""

    class Mode(enum.Enum):
        ClipSpecifiedWeights = 0
        ClipAllWeights = 1

    def __init__(self, weightIds: Sequence[str], maxNorm: float):
        self.weightIds = list(weightIds)
        self.maxNorm = float(maxNorm)
        self._mode = ClipNormSettings.Mode.ClipSpecifiedWeights

    @staticmethod
    def clipWeights(weightIds: Sequence[str], maxNorm: float) -> "ClipNormSettings":
        return ClipNormSettings(weightIds, maxNorm)

    @staticmethod
    def clipAllWeights(maxNorm: float) -> "ClipNormSettings":
        settings = ClipNormSettings([], maxNorm)
        settings._mode = ClipNormSettings.Mode.ClipAllWeights
        return settings

    def getWeightIds(self) -> list[str]:
        return self.weightIds

    def getMaxNorm(self) -> float:
        return self.maxNorm

    def getMode(self) -> "ClipNormSettings.Mode":
        return self._mode

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClipNormSettings) and \
            (self.weightIds, self.maxNorm, self._mode) == (other.weightIds, other.maxNorm, other._mode)

    def __repr__(self) -> str:
        clipped = "all weights" if self._mode is ClipNormSettings.Mode.ClipAllWeights else self.weightIds
        return f"ClipNormSettings({clipped}, maxNorm={self.maxNorm})"


def checked_clip_norm_settings(settings: Any, optimizer: str) -> tuple[ClipNormSettings, ...]:
    """The optimiser's ``clip_norm_settings``, checked: a list of ``popart.ClipNormSettings``."""
    settings = tuple(settings or ())
    for entry in settings:
        if not isinstance(entry, ClipNormSettings):
            raise TypeError(f"{optimizer}: clip_norm_settings must be a list of popart.ClipNormSettings "
                            f"(ClipNormSettings.clipWeights(ids, maxNorm) or clipAllWeights(maxNorm)), got {entry!r}")
    return settings


class Optimizer:
    """Hyperparameters by name: defaults (``default<Name>`` keys), per-weight values
    (``insertSpecific``), and the loss scaling shared by all weights."""

    _DEFAULTS: dict[str, tuple[float, bool]] = {}
    _GLOBAL = ("lossScaling",)
    _NON_NEGATIVE: tuple[tuple[str, str], ...] = ()  # (value, its name in PopART's message)
    _POSITIVE: tuple[tuple[str, str], ...] = ()
    debugContext: Any = ""  # the name (or popart.DebugContext) its ops' debug records come under
    clipNormSettings: tuple[ClipNormSettings, ...] = ()  # gradient clipping (SGD and Adam)

    def __init__(self, params: Optional[Mapping[str, Any]] = None):
        params = dict(params or {})
        known = {f"default{k[0].upper()}{k[1:]}" for k in self._DEFAULTS if k not in self._GLOBAL} | set(self._GLOBAL)
        unknown = sorted(set(params) - known)
        if unknown:
            raise popart_exception(f"Invalid {type(self).__name__} parameter(s) {unknown}; expected some of "
                                   f"{sorted(known)}")
        self._defaults = {}
        for name, default in self._DEFAULTS.items():
            key = name if name in self._GLOBAL else f"default{name[0].upper()}{name[1:]}"
            self._defaults[name] = optimizer_value(params.get(key, default), f"{type(self).__name__} {key}")
        self._check_values(self._defaults)
        self._specific: dict[str, dict[str, OptimizerValue]] = {}

    def _check_values(self, values: Mapping[str, OptimizerValue]) -> None:
        """PopART's checks of one set of values (a negative rate, a constant zero learning rate...)."""
        name = type(self).__name__ if type(self).__name__ != "ConstSGD" else "SGD"
        lr = values["learningRate"]
        if lr.val() < 0:
            raise popart_exception(f"Negative learning rate ({lr.val()}) in {name}, bailing as this might be a "
                                   "user error.")
        if lr.val() == 0.0 and lr.isConst():
            raise popart_exception(f"Constant, zero learning rate in {name}, bailing as this might be a user error.")
        for key, label in self._NON_NEGATIVE:
            if values[key].val() < 0:
                raise popart_exception(f"Negative {label} ({values[key].val()}) in {name}, bailing as this might be "
                                       "a user error")
        for key, label in self._POSITIVE:
            if values[key].val() <= 0:
                raise popart_exception(f"Non-positive {label} ({values[key].val()}) in {name} is not supported")

    def type(self) -> str:
        return type(self).__name__

    def insertSpecific(self, weightId: str, params: Mapping[str, Any]) -> None:
        """Values for one weight (keys without ``default``); the others keep the defaults."""
        names = [n for n in self._DEFAULTS if n not in self._GLOBAL]
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise popart_exception(f"Invalid {type(self).__name__} specific parameter(s) {unknown} for "
                                   f"'{weightId}'; expected some of {names}")
        values = {name: self._defaults[name] for name in names}
        values.update({k: optimizer_value(v, f"{weightId} {k}") for k, v in params.items()})
        self._check_values(values)
        self._specific[weightId] = values

    def hasSpecific(self, weightId: Optional[str] = None) -> bool:
        return bool(self._specific) if weightId is None else weightId in self._specific

    def value(self, name: str, weight: Optional[str] = None) -> OptimizerValue:
        """The ``name`` hyperparameter of ``weight`` (its specific value, else the default)."""
        if weight is not None and weight in self._specific and name in self._specific[weight]:
            return self._specific[weight][name]
        return self._defaults[name]

    def key(self, weight: str) -> str:
        """``specific___<weight>`` or ``default``: which set of values the weight reads."""
        return f"specific___{weight}" if weight in self._specific else "default"

    def getLossScalingVal(self) -> float:
        return self._defaults["lossScaling"].val()

    def lossScaling(self) -> OptimizerValue:
        return self._defaults["lossScaling"]

    def setLossScalingVal(self, value: float) -> None:
        self._defaults["lossScaling"] = OptimizerValue(value, self._defaults["lossScaling"].isConst())

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v.val()}{'' if v.isConst() else '*'}" for k, v in self._defaults.items())
        return f"{type(self).__name__}({shown})"


class SGD(Optimizer):
    """Stochastic gradient descent with weight decay, momentum, dampening, velocity scaling and
    Nesterov momentum (see ``optimizer_steps`` for the update)."""

    _DEFAULTS = {"learningRate": (0.1, True), "weightDecay": (0.0, True), "momentum": (0.0, True),
                 "dampening": (0.0, True), "velocityScaling": (1.0, True), "nesterov": (0.0, True),
                 "lossScaling": (1.0, True)}
    _NON_NEGATIVE = (("weightDecay", "weight decay"), ("momentum", "momentum"), ("dampening", "dampening"))
    _POSITIVE = (("velocityScaling", "velocity scaling"),)

    def __init__(self, params: Optional[Mapping[str, Any]] = None, clip_norm_settings: Any = (),
                 accumulatorAndMomentum: SGDAccumulatorAndMomentum = SGDAccumulatorAndMomentum.Combined,
                 accumType: DataType = DataType.UNDEFINED, accl1Type: DataType = DataType.UNDEFINED,
                 debugContext: Any = "sgd"):
        params = dict(params or {})
        if "nesterov" in params:
            params["defaultNesterov"] = params.pop("nesterov")
            value = params["defaultNesterov"]
            if isinstance(value, bool):
                params["defaultNesterov"] = (float(value), True)
        super().__init__(params)
        self.clipNormSettings = checked_clip_norm_settings(clip_norm_settings, "SGD")
        self.accumulatorAndMomentum = accumulatorAndMomentum
        self.debugContext = debugContext

    def learningRates(self): return self._defaults["learningRate"]  # noqa: E704 - PopART's accessors
    def weightDecays(self): return self._defaults["weightDecay"]  # noqa: E704
    def momentums(self): return self._defaults["momentum"]  # noqa: E704
    def dampenings(self): return self._defaults["dampening"]  # noqa: E704
    def velocityScalings(self): return self._defaults["velocityScaling"]  # noqa: E704
    def nesterov(self): return self._defaults["nesterov"]  # noqa: E704


class ConstSGD(SGD):
    """SGD whose learning rate, weight decay and loss scaling are all constant."""

    def __init__(self, learning_rate: float, weight_decay: float = 0.0, loss_scaling: float = 1.0):
        super().__init__({"defaultLearningRate": (learning_rate, True), "defaultWeightDecay": (weight_decay, True),
                          "lossScaling": (loss_scaling, True)}, debugContext="")

    def type(self) -> str:
        return "SGD"


class Adam(Optimizer):
    """Adam, AdamNoBias, AdaMax, Lamb and LambNoBias, with decoupled weight decay (Decay) or L2
    regularisation (see ``optimizer_steps`` for the update)."""

    _DEFAULTS = {"learningRate": (0.1, True), "weightDecay": (0.0, True), "beta1": (0.9, True),
                 "beta2": (0.999, True), "eps": (1e-6, True), "maxWeightNorm": (10.0, True),
                 "lossScaling": (1.0, True)}
    _NON_NEGATIVE = (("weightDecay", "weight decay"), ("beta1", "beta1"), ("beta2", "beta2"))
    _POSITIVE = (("eps", "eps"),)

    def __init__(self, params: Optional[Mapping[str, Any]] = None, mode: AdamMode = AdamMode.Adam,
                 weight_decay_mode: WeightDecayMode = WeightDecayMode.Decay,
                 accum_type: DataType = DataType.UNDEFINED, accl1_type: DataType = DataType.UNDEFINED,
                 accl2_type: DataType = DataType.UNDEFINED, clip_norm_settings: Any = (),
                 scaled_optimizer_state: bool = False, debugContext: Any = "adam"):
        super().__init__(params)
        if not isinstance(mode, AdamMode):
            raise TypeError(f"Adam: mode must be a popart.AdamMode, got {mode!r}")
        if not isinstance(weight_decay_mode, WeightDecayMode):
            raise TypeError(f"Adam: weight_decay_mode must be a popart.WeightDecayMode, got {weight_decay_mode!r}")
        self.clipNormSettings = checked_clip_norm_settings(clip_norm_settings, "Adam")
        self.mode = mode
        self.weightDecayMode = weight_decay_mode
        self.debugContext = debugContext

    def learningRates(self): return self._defaults["learningRate"]  # noqa: E704
    def weightDecays(self): return self._defaults["weightDecay"]  # noqa: E704
    def beta1s(self): return self._defaults["beta1"]  # noqa: E704
    def beta2s(self): return self._defaults["beta2"]  # noqa: E704
    def epss(self): return self._defaults["eps"]  # noqa: E704
    def maxWeightNorms(self): return self._defaults["maxWeightNorm"]  # noqa: E704


class Adaptive(Optimizer):
    """AdaGrad, RMSProp, CenteredRMSProp and AdaDelta, with optional momentum, decoupled weight decay
    (Decay) or L2 regularisation, and TensorFlow's RMSProp form (``rmspropTFVariant``: epsilon inside
    the square root, the first accumulator starting at 1, the learning rate in the momentum); see
    ``optimizer_steps`` for the update."""

    _DEFAULTS = {"learningRate": (0.01, True), "weightDecay": (0.0, True), "alpha": (0.99, True),
                 "momentum": (0.0, True), "eps": (1e-6, True), "lossScaling": (1.0, True)}
    _NON_NEGATIVE = (("weightDecay", "weight decay"), ("alpha", "alpha"), ("momentum", "momentum"))
    _POSITIVE = (("eps", "eps"),)

    def __init__(self, params: Optional[Mapping[str, Any]] = None, mode: AdaptiveMode = AdaptiveMode.RMSProp,
                 weight_decay_mode: WeightDecayMode = WeightDecayMode.Decay,
                 accum_type: DataType = DataType.UNDEFINED, accl1_type: DataType = DataType.UNDEFINED,
                 accl2_type: DataType = DataType.UNDEFINED, accl3_type: DataType = DataType.UNDEFINED,
                 rmsprop_tf_variant: bool = False, debugContext: Any = "adaptive"):
        super().__init__(params)
        if not isinstance(mode, AdaptiveMode):
            raise TypeError(f"Adaptive: mode must be a popart.AdaptiveMode, got {mode!r}")
        if not isinstance(weight_decay_mode, WeightDecayMode):
            raise TypeError(f"Adaptive: weight_decay_mode must be a popart.WeightDecayMode, got "
                            f"{weight_decay_mode!r}")
        self.mode = mode
        self.weightDecayMode = weight_decay_mode
        self.rmspropTFVariant = bool(rmsprop_tf_variant)
        self.debugContext = debugContext

    def learningRates(self): return self._defaults["learningRate"]  # noqa: E704
    def weightDecays(self): return self._defaults["weightDecay"]  # noqa: E704
    def alphas(self): return self._defaults["alpha"]  # noqa: E704
    def momentums(self): return self._defaults["momentum"]  # noqa: E704
    def epss(self): return self._defaults["eps"]  # noqa: E704


AnyOptimizer = Union[SGD, Adam, Adaptive]
