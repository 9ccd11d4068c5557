"""``popart.getLogger()``: PopART's logger, a standard Python logger named ``popart.<module>``.

``POPART_LOG_LEVEL`` (TRACE, DEBUG, INFO, WARN, ERR, CRITICAL, OFF; OFF by default) sets the level of
every module and ``POPART_LOG_DEST`` where the lines go (stdout, stderr or a file name), in PopART's
format ``[time] [popart:module] [level] message``."""
from __future__ import annotations

import logging
import os
import sys

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


def _configure() -> None:
    root = logging.getLogger("popart")
    root.setLevel(_LEVELS.get(os.environ.get("POPART_LOG_LEVEL", "OFF").upper(), _LEVELS["OFF"]))
    root.propagate = False
    destination = os.environ.get("POPART_LOG_DEST", "stderr")
    handler = logging.StreamHandler(sys.stdout if destination == "stdout" else sys.stderr) \
        if destination in ("stdout", "stderr") else logging.FileHandler(destination)
    handler.setFormatter(logging.Formatter("[%(asctime)s] [%(name)s] [%(levelname)s] %(message)s"))
    root.addHandler(handler)


_configure()
