"""Each PopART test starts from the log levels popart was imported with, whatever an earlier test set."""
import logging

import pytest


@pytest.fixture(autouse=True)
def popart_log_levels_restored():
    loggers = [logging.getLogger("popart")] + [
        logger for name, logger in logging.root.manager.loggerDict.items()
        if name.startswith("popart.") and isinstance(logger, logging.Logger)]
    levels = {logger.name: logger.level for logger in loggers}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
