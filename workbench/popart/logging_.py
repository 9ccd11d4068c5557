"""``popart.getLogger()``: PopART's logging, one standard Python logger per PopART module.

The modules are PopART's (``session``, ``ir``, ``devicex``, ``popart``, ``transform``, ``pattern``,
``builder``, ``op``, ``opx``, ``ces``, ``python``); ``"all"`` means every one. Each line has the guide's
format, ``[2019-10-16 13:55:05.359] [popart:devicex] [debug] message``. ``POPART_LOG_LEVEL`` (TRACE, DEBUG,
INFO, WARN, ERR, CRITICAL, OFF; WARN by default, as PopART's) sets the level of every module and ``POPART_LOG_DEST``
where the lines go (stdout, stderr or a file name). ``POPART_LOG_CONFIG`` names a JSON file of
``{"module": "LEVEL"}`` pairs whose levels override ``POPART_LOG_LEVEL`` for those modules. What each
module logs for the steps a session takes is in ``step_log``."""
from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from typing import Optional

from .errors import popart_exception

TRACE = 5
_LEVELS = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
           "ERR": logging.ERROR, "CRITICAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}
# spdlog's names of the levels, as PopART's lines show them.
_SHOWN = {TRACE: "trace", logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning",
          logging.ERROR: "error", logging.CRITICAL: "critical"}
MODULES = ("session", "ir", "devicex", "popart", "transform", "pattern", "builder", "op", "opx", "ces", "python")


def python_logger(module: str) -> logging.Logger:
    """The Python logger of a PopART module (``popart`` is the parent of the others)."""
    return logging.getLogger("popart" if module in ("all", "popart") else f"popart.{module}")


class Logger:
    """Logs of one PopART module (``"all"`` for every module)."""

    def __init__(self, name: str = "all"):
        if name != "all" and name not in MODULES:
            raise popart_exception(f"Invalid logging module '{name}'; expected one of all, {', '.join(MODULES)}")
        self._all = name == "all"
        self._logger = python_logger(name)

    def setLevel(self, level: str) -> None:
        if level.upper() not in _LEVELS:
            raise ValueError(f"unknown log level {level!r}; expected one of {', '.join(_LEVELS)}")
        self._logger.setLevel(_LEVELS[level.upper()])
        if self._all:  # as PopART's "all": every module that has a level of its own takes this one
            for module in MODULES:
                python_logger(module).setLevel(logging.NOTSET if module != "popart" else _LEVELS[level.upper()])

    def trace(self, message: str) -> None:
        self._logger.log(TRACE, message)

    def debug(self, message: str) -> None:
        self._logger.debug(message)

    def info(self, message: str) -> None:
        self._logger.info(message)

    def warn(self, message: str) -> None:
        self._logger.warning(message)

    def error(self, message: str) -> None:
        self._logger.error(message)

    def critical(self, message: str) -> None:
        self._logger.critical(message)


def getLogger(name: str = "all") -> Logger:
    return Logger(name)


class PopartFormatter(logging.Formatter):
    """``[2019-10-16 13:55:05.359] [popart:devicex] [debug] message``."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
        module = "popart" if record.name == "popart" else record.name.split(".", 1)[1]
        level = _SHOWN.get(record.levelno, record.levelname.lower())
        return f"[{stamp}.{int(record.msecs):03d}] [popart:{module}] [{level}] {record.getMessage()}"


class _StandardStream(logging.StreamHandler):
    """Writes to whatever ``sys.stdout``/``sys.stderr`` is when a line is logged (a notebook or a test
    may replace them after popart is imported)."""

    def __init__(self, name: str):
        self._which = name
        super().__init__()

    @property
    def stream(self):
        return getattr(sys, self._which)

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler sets it; the stream is looked up each time instead
        pass


def module_levels(path: str) -> dict[str, int]:
    """The levels of ``POPART_LOG_CONFIG``'s file, by module; a file that cannot be used raises
    ValueError naming what is wrong."""
    try:
        with open(path, encoding="utf-8") as file:
            config = json.load(file)
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"POPART_LOG_CONFIG={path!r} cannot be read as JSON: {error}") from None
    if not isinstance(config, dict):
        raise ValueError(f"POPART_LOG_CONFIG={path!r} must hold an object of module: level pairs")
    levels = {}
    for module, level in config.items():
        if not isinstance(level, str) or level.upper() not in _LEVELS:
            raise ValueError(f"POPART_LOG_CONFIG={path!r}: module {module!r} has level {level!r}; "
                             f"expected one of {', '.join(_LEVELS)}")
        levels[module] = _LEVELS[level.upper()]
    return levels


class _LazyLevelLogger(logging.Logger):
    """The root of PopART's loggers, whose level until one is set is ``POPART_LOG_LEVEL`` as it is when a
    line is first weighed, not when popart is imported: PopART reads the variable when it first logs,
    so a script (or a test) may set it after ``import popart``."""

    _set_level = logging.NOTSET
    _from_environment: Optional[int] = None

    @property  # type: ignore[override]
    def level(self) -> int:
        if self._set_level != logging.NOTSET:
            return self._set_level
        if self._from_environment is None:
            setting = os.environ.get("POPART_LOG_LEVEL", "WARN").upper()
            self._from_environment = _LEVELS.get(setting, _LEVELS["WARN"])
        return self._from_environment

    @level.setter
    def level(self, value: int) -> None:
        self._set_level = value


def _configure() -> None:
    logging.addLevelName(TRACE, "TRACE")
    root = logging.getLogger("popart")
    root.__class__ = _LazyLevelLogger  # it may exist already: modules below popart log under it
    root.propagate = False
    destination = os.environ.get("POPART_LOG_DEST", "stderr")
    handler = _StandardStream(destination) if destination in ("stdout", "stderr") else logging.FileHandler(destination)
    handler.setFormatter(PopartFormatter())
    root.addHandler(handler)
    config = os.environ.get("POPART_LOG_CONFIG")
    if config:
        try:
            for module, level in module_levels(config).items():
                logging.getLogger(f"popart.{module}").setLevel(level)
        except ValueError as error:  # importing popart must not fail over a logging setting
            warnings.warn(str(error), stacklevel=2)


_configure()
