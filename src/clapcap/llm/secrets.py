"""API keys: read from the environment or a ``.env`` file, never printed or logged."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from clapcap.llm.errors import MissingKeyError

logger = logging.getLogger(__name__)

_MASK = "**********"


class SecretStr:
    """A string whose ``str``/``repr`` are masked; :meth:`get` returns the real value.

    ``source`` says where the value came from (``$OPENAI_API_KEY``, ``OPENAI_API_KEY in
    .env``), so that an error about a refused key can name the variable, never the value.
    """

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str = "") -> None:
        self._value = value
        self.source = source

    def get(self) -> str:
        """Return the secret value (only to build an HTTP header)."""
        return self._value

    def redact(self, text: str) -> str:
        """Return ``text`` with every occurrence of the secret replaced by a mask."""
        return text.replace(self._value, _MASK) if self._value else text

    def __repr__(self) -> str:
        return f"SecretStr('{_MASK}')"

    __str__ = __repr__

    def __reduce__(self):  # pickling would leak the value into files
        raise TypeError("SecretStr cannot be pickled")


def read_env_file(path: str | Path) -> dict[str, str]:
    """Parse a ``.env`` file (``KEY=VALUE`` lines, optional ``export`` and quotes).

    Returns:
        The variables found; empty when the file does not exist.

    Raises:
        ValueError: naming the file and line for a line that is not ``KEY=VALUE``
            (the line's content is not echoed, it may hold a secret).
    """
    path = Path(path)
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    for lineno, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"{path}: line {lineno}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def _lookup(env_var: str, env_file: str | Path | None) -> tuple[str | None, str]:
    """The key's value (None when absent) and where it was found (``$VAR`` or ``VAR in FILE``)."""
    value = os.environ.get(env_var)
    if value:
        return value, f"${env_var}"
    if env_file:
        return read_env_file(env_file).get(env_var) or None, f"{env_var} in {env_file}"
    return None, ""


def resolve_api_key(env_var: str, env_file: str | Path | None = ".env") -> SecretStr | None:
    """Find the API key in ``$env_var``, else in ``env_file``.

    Returns:
        The key wrapped in :class:`SecretStr`, or None when neither holds it (a local
        server such as vLLM usually needs none).

    Raises:
        ValueError: when ``env_file`` has a line that is not ``KEY=VALUE``.
    """
    value, where = _lookup(env_var, env_file)
    if value is None:
        logger.info("no API key in $%s or %s; requests carry no Authorization header", env_var, env_file)
        return None
    logger.info("API key read from %s", where)
    return SecretStr(value, where)


def require_api_key(env_var: str, env_file: str | Path | None = ".env") -> SecretStr:
    """Like :func:`resolve_api_key`, for endpoints that cannot be used without a key.

    Returns:
        The key wrapped in :class:`SecretStr`.

    Raises:
        MissingKeyError: naming the variable and the file (never a value) when neither
            holds the key; it is both an :class:`~clapcap.llm.errors.LLMError` and a
            ``ValueError``.
        ValueError: when ``env_file`` has a line that is not ``KEY=VALUE``.
    """
    value, where = _lookup(env_var, env_file)
    if value is None:
        where = f" or in {env_file}" if env_file else ""
        raise MissingKeyError(f"no API key: set {env_var} in the environment{where}")
    logger.info("API key read from %s", where)
    return SecretStr(value, where)
