"""``popart.getLogger()``: PopART's logger, a standard Python logger named ``popart.<module>``.

``POPART_LOG_LEVEL`` (TRACE, DEBUG, INFO, WARN, ERR, CRITICAL, OFF; OFF by default) sets the level of
every module and ``POPART_LOG_DEST`` where the lines go (stdout, stderr or a file name), in PopART's
format ``[time] [popart:module] [level] message``. ``POPART_LOG_CONFIG`` names a JSON file of
``{"module": "LEVEL"}`` pairs whose levels override ``POPART_LOG_LEVEL`` for those modules."""
from __future__ import annotations

import json
import logging
import os
import sys
import warnings

_LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
           "ERR": logging.ERROR, "CRITICAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}


class Logger:
    """Logs of one PopART module (``"all"`` for every module)."""

    def __init__(self, name: str = "all"):
        self._logger = logging.getLogger("popart" if name == "all" else f"popart.{name}")

    def setLevel(self, level: str) -> None:
        if level.upper() not in _LEVELS:
            raise ValueError(f"unknown log level {level!r}; expected one of {', '.join(_LEVELS)}")
        self._logger.setLevel(_LEVELS[level.upper()])

    def trace(self, message: str) -> None:
        self._logger.log(5, message)

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


def _configure() -> None:
    root = logging.getLogger("popart")
    root.setLevel(_LEVELS.get(os.environ.get("POPART_LOG_LEVEL", "OFF").upper(), _LEVELS["OFF"]))
    root.propagate = False
    destination = os.environ.get("POPART_LOG_DEST", "stderr")
    handler = logging.StreamHandler(sys.stdout if destination == "stdout" else sys.stderr) \
        if destination in ("stdout", "stderr") else logging.FileHandler(destination)
    handler.setFormatter(logging.Formatter("[%(asctime)s] [%(name)s] [%(levelname)s] %(message)s"))
    root.addHandler(handler)
    config = os.environ.get("POPART_LOG_CONFIG")
    if config:
        try:
            for module, level in module_levels(config).items():
                logging.getLogger(f"popart.{module}").setLevel(level)
        except ValueError as error:  # importing popart must not fail over a logging setting
            warnings.warn(str(error), stacklevel=2)


_configure()
