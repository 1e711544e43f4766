"""User-facing errors and the exit code each one gives.

Every error a user can cause or fix (a wrong parameter, a malformed input file, an
unreachable endpoint, a training run that did not learn) derives from :class:`ClapcapError`.
The entry points (the ``clapcap`` command and every DVC stage script, both through
:func:`clapcap.entry.run_entry`) print it as one line, ``clapcap: error: <message>``,
on stderr and exit with :func:`exit_code`:

- **2**, the input is wrong (:class:`InputError`: ``params.yaml``, a data file, a dump, a
  command-line value), and also a plain ``ValueError`` or a missing file or folder;
- **1**, a run failed on valid input (:class:`ClapcapError`: an endpoint, a training run, a
  data-validation suite, a missing asset (:class:`AssetError`) or optional package), and
  also an ``OSError`` on a named file (a permission, a full disk).

Any other exception is a bug and keeps its traceback. Messages name the file and, where
there is one, the 1-based line (``params.yaml:12: data.n_clips: ...``) or CSV row (counted
as in a spreadsheet: the header is row 1, so the first data row is row 2).

This module imports nothing from the rest of the package, so any module may use it.
"""

from __future__ import annotations

USAGE = 2
FAILURE = 1


class ClapcapError(Exception):
    """An error the user can act on: shown as ``clapcap: error: <message>``, exit code 1."""

    exit_code: int = FAILURE


class InputError(ClapcapError):
    """The input (parameters, a data file, a dump, an argument) is wrong: exit code 2."""

    exit_code = USAGE


class ConfigError(InputError, ValueError):
    """A parameter file or section does not match its typed schema (exit code 2).

    Attributes:
        key: the dotted key path the error is about (``data.synthetic.n_clips``), or None;
            :func:`load_section` uses it to prefix the message with ``<file>:<line>:``.
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class MissingDependencyError(ClapcapError, ModuleNotFoundError):
    """An optional package is not installed; the message names what to install."""


class AssetError(ClapcapError, RuntimeError):
    """An asset needed offline is missing or unusable: exit code 1.

    Raised for the tools of offline caption scoring (aac-metrics' Java, PTB tokenizer and
    model files, :mod:`clapcap.evaluation.aac_assets`) and for the Hugging Face hub cache
    that ``laion_clap`` imports from (the npm vocab package and files,
    :mod:`clapcap.encoders.hf_cache`); the message names the asset and how to provide it.
    """


def exit_code(err: BaseException) -> int | None:
    """The exit code for ``err`` when it is a user-facing error, else None (a bug).

    Returns:
        ``err.exit_code`` for a :class:`ClapcapError`; 2 for a ``ValueError`` or a missing
        file or folder; 1 for another ``OSError`` that names a file; None otherwise.
    """
    if isinstance(err, ClapcapError):
        return err.exit_code
    if isinstance(err, (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError)):
        return USAGE
    if isinstance(err, OSError) and err.filename is not None:
        return FAILURE
    return None


def error_message(err: BaseException) -> str:
    """The text after ``clapcap: error:`` (the class name when the message is empty)."""
    text = str(err).strip()
    return text or type(err).__name__
