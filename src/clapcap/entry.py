"""The one way in: logging set-up and error reporting for the CLI and the DVC stage scripts.

:func:`run_entry` runs an entry function with quiet logging and turns a user-facing error
(see :mod:`clapcap.errors`) into ``clapcap: error: <message>`` on stderr and an exit
code: 2 for wrong input, 1 for a failed run. Any other exception is a bug and keeps its
traceback. With ``verbose`` (``clapcap -v``, or ``CLAPCAP_VERBOSE=1`` for the stage scripts)
user errors show their traceback too, and library logs and warnings are not held back.

:func:`run_script` is a stage script's ``__main__``: it parses the script's command line
first (``--help`` prints the script's docstring and exits 0; an argument the script does not
take exits 2 with a usage line), then runs ``main`` through :func:`run_entry`.

While the entry function runs, the variables of :data:`ENV_DEFAULTS` (and, unless verbose,
:data:`QUIET_ENV`) are set where the user has not set them: the libraries read them when
the entry function imports them.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from clapcap.errors import error_message, exit_code

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
VERBOSE_ENV = "CLAPCAP_VERBOSE"

# Our own loggers: INFO by default, DEBUG with -v. ``__main__`` is a stage script's.
OWN_LOGGERS = ("clapcap", "__main__")
# Quiet: another library's record is shown from this level up. A successful command prints
# its progress and its result only; library warnings (and Python warnings, which are logged
# as ``py.warnings``) show with -v.
LIBRARY_LEVEL = logging.ERROR
# Libraries that log on a handler of their own (not through the root logger), so the filter
# below does not see them: their level is raised instead. prefect also resets it when
# imported, from the environment (QUIET_ENV).
SELF_HANDLED_LOGGERS = ("mlflow", "prefect", "alembic")
QUIET_ENV = {"MLFLOW_LOGGING_LEVEL": "ERROR", "PREFECT_LOGGING_LEVEL": "ERROR"}
# Set for every entry point, verbose or not (a user's own setting wins), as the Makefile does:
# no analytics or telemetry calls, which fail offline (Prefect's telemetry service printed
# two tracebacks against a locked SQLite database), and MLflow's loggers left to ours (its
# own handler coloured its warnings with raw ANSI codes, also into files and pipes).
ENV_DEFAULTS = {
    "DVC_NO_ANALYTICS": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "MLFLOW_CONFIGURE_LOGGING": "false",
    # A flow with no PREFECT_API_URL starts a temporary local server, in 10-18 s on an idle
    # 2-core machine; Prefect's 20-s default failed `clapcap data flow` on a busy one.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
}


class _QuietFilter(logging.Filter):
    """Pass our own records at any level and other libraries' from LIBRARY_LEVEL up.

    A filter rather than logger levels: some libraries set their own loggers' levels when
    imported (great_expectations sets one to INFO), which a parent's level cannot override.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= LIBRARY_LEVEL or record.name.split(".")[0] in OWN_LOGGERS


def verbose_from_env() -> bool:
    """True when ``CLAPCAP_VERBOSE`` is set to something other than empty, 0 or false."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false", "no")


@contextmanager
def _env_defaults(defaults: dict[str, str]) -> Iterator[None]:
    """Set each of ``defaults`` that the environment does not set yet; unset those after."""
    added = [key for key in defaults if key not in os.environ]
    for key in added:
        os.environ[key] = defaults[key]
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


@contextmanager
def entry_logging(verbose: bool = False) -> Iterator[None]:
    """Log to stderr for the duration of an entry point; restore the previous set-up after.

    Quiet (the default): our loggers at INFO, other libraries from ERROR up. Verbose: our
    loggers at DEBUG, libraries at INFO. Python warnings are logged (``py.warnings``), so
    they show with verbose only. The environment defaults (module docstring) are set for
    the duration. Restoring keeps in-process callers (tests calling ``main([...])``) free of
    side effects.
    """
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    levels = {"": logging.INFO if verbose else logging.WARNING}
    levels.update({name: logging.DEBUG if verbose else logging.INFO for name in OWN_LOGGERS})
    if not verbose:
        handler.addFilter(_QuietFilter())
        levels.update({name: LIBRARY_LEVEL for name in SELF_HANDLED_LOGGERS})
    saved = {name: logging.getLogger(name).level for name in levels}
    saved_showwarning = warnings.showwarning
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        with _env_defaults({**ENV_DEFAULTS, **({} if verbose else QUIET_ENV)}):
            yield
    finally:
        logging.captureWarnings(False)
        warnings.showwarning = saved_showwarning
        root.removeHandler(handler)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


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


def script_parser(main: Callable[..., Any]) -> argparse.ArgumentParser:
    """The argument parser of the stage script that defines ``main``: the script's file name
    as ``prog`` and its module docstring, as written, as the description."""
    doc = getattr(main, "__globals__", {}).get("__doc__")
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def run_script(
    main: Callable[..., int | None],
    arguments: Callable[[argparse.ArgumentParser], object] | None = None,
    *,
    argv: Sequence[str] | None = None,
) -> int:
    """Run a stage script's ``main`` with :func:`run_entry`, after parsing its command line.

    ``arguments`` adds the script's arguments to its :func:`script_parser`; ``main`` then
    receives the parsed ``argparse.Namespace``. Without ``arguments`` the script takes none
    and ``main`` is called without one. ``argv`` defaults to ``sys.argv[1:]``. Nothing runs
    before the command line is accepted, so ``--help`` has no side effects.

    Returns:
        The exit code of :func:`run_entry`.

    Raises:
        SystemExit: 0 after printing the help (``-h``/``--help``); 2 after printing the usage
            and the reason, on an argument the script does not take.
    """
    parser = script_parser(main)
    if arguments is not None:
        arguments(parser)
    args = parser.parse_args(argv)
    return run_entry(lambda: main(args) if arguments is not None else main())
