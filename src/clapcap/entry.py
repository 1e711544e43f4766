"""The one way in: logging set-up and error reporting for the CLI and the DVC stage scripts.

:func:`run_entry` runs an entry function with quiet logging and turns a user-facing error
(see :mod:`clapcap.errors`) into ``clapcap: error: <message>`` on stderr and an exit
code: 2 for wrong input, 1 for a failed run. Any other exception is a bug and keeps its
traceback. With ``verbose`` (``clapcap -v``, or ``CLAPCAP_VERBOSE=1`` for the stage scripts)
user errors show their traceback too, and library loggers are not held back.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from clapcap.errors import error_message, exit_code

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
VERBOSE_ENV = "CLAPCAP_VERBOSE"

# Our own loggers: INFO by default, DEBUG with -v. ``__main__`` is a stage script's.
OWN_LOGGERS = ("clapcap", "__main__")
# Libraries that log INFO on a handler of their own (not through the root logger), so the
# filter below does not see them: their level is raised instead. mlflow and prefect also
# reset it when imported, from the environment (QUIET_ENV).
SELF_HANDLED_LOGGERS = ("mlflow", "prefect", "alembic")
QUIET_ENV = {"MLFLOW_LOGGING_LEVEL": "WARNING", "PREFECT_LOGGING_LEVEL": "WARNING"}


class _QuietFilter(logging.Filter):
    """Pass our own records at any level and other libraries' from WARNING up.

    A filter rather than logger levels: some libraries set their own loggers' levels when
    imported (great_expectations sets one to INFO), which a parent's level cannot override.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name.split(".")[0] in OWN_LOGGERS


def verbose_from_env() -> bool:
    """True when ``CLAPCAP_VERBOSE`` is set to something other than empty, 0 or false."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false", "no")


@contextmanager
def entry_logging(verbose: bool = False) -> Iterator[None]:
    """Log to stderr for the duration of an entry point; restore the previous set-up after.

    Quiet (the default): our loggers at INFO, the root and every library at WARNING.
    Verbose: our loggers at DEBUG, libraries at INFO. Restoring keeps in-process callers
    (tests calling ``main([...])``) free of side effects.
    """
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    levels = {"": logging.INFO if verbose else logging.WARNING}
    levels.update({name: logging.DEBUG if verbose else logging.INFO for name in OWN_LOGGERS})
    if not verbose:
        handler.addFilter(_QuietFilter())
        levels.update({name: logging.WARNING for name in SELF_HANDLED_LOGGERS})
    saved = {name: logging.getLogger(name).level for name in levels}
    env_set = [] if verbose else [k for k in QUIET_ENV if k not in os.environ]
    for key in env_set:
        os.environ[key] = QUIET_ENV[key]
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
        for key in env_set:
            os.environ.pop(key, None)


def run_entry(fn: Callable[[], int | None], *, verbose: bool | None = None) -> int:
    """Run entry function ``fn`` with :func:`entry_logging`. Returns the exit code.

    ``fn``'s own return value (None means 0) is the exit code when it returns. A
    user-facing error (:func:`clapcap.errors.exit_code` is not None) prints
    ``clapcap: error: <message>`` on stderr and returns its code (2 wrong input, 1 failed
    run); a KeyboardInterrupt returns 130.

    Raises:
        Exception: any other exception (a bug), unchanged, with its traceback.
    """
    verbose = verbose_from_env() if verbose is None else verbose
    with entry_logging(verbose):
        try:
            return int(fn() or 0)
        except KeyboardInterrupt:
            print("clapcap: interrupted", file=sys.stderr)
            return 130
        except Exception as err:
            code = exit_code(err)
            if code is None:
                raise
            if verbose:
                traceback.print_exc()
            print(f"clapcap: error: {error_message(err)}", file=sys.stderr)
            return code
