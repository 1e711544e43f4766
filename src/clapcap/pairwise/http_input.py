"""Checks of what a client sends the rating server: the body's size, the vote form, a ``Range``.

Written here rather than taken from a framework: ``http.server`` (see
:mod:`clapcap.pairwise.server` for why it serves the page) leaves the request body and
``Range`` to the handler, and each check is a few lines over the standard library
(:func:`urllib.parse.parse_qs` parses the form).
"""

from __future__ import annotations

import re
from http import HTTPStatus
from http.client import HTTPMessage
from urllib.parse import parse_qs

_BYTES_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_DIGITS = re.compile(r"[0-9]+")
MAX_BODY_BYTES = 64 * 1024  # a vote form is under 300 bytes
MAX_FORM_FIELDS = 16


class VoteRefused(ValueError):
    """A vote the server does not store; the message says why, ``status`` is the HTTP code."""

    def __init__(self, message: str, status: int = HTTPStatus.BAD_REQUEST) -> None:
        super().__init__(message)
        self.status = status


def body_length(headers: HTTPMessage, limit: int) -> int:
    """The body size a request announces, checked: one ``Content-Length`` of digits, at most ``limit``.

    Raises:
        VoteRefused: 411 without a ``Content-Length`` (or with ``Transfer-Encoding``, which
            is not read), 400 for a malformed or repeated one, 413 over ``limit``.
    """
    values = headers.get_all("Content-Length") or []
    if headers.get("Transfer-Encoding") is not None or not values:
        raise VoteRefused("a vote needs a Content-Length (and no Transfer-Encoding)",
                          HTTPStatus.LENGTH_REQUIRED)
    if len(values) > 1 or not _DIGITS.fullmatch(values[0].strip()):
        shown = ", ".join(v[:20] for v in values)
        raise VoteRefused(f"invalid Content-Length {shown!r}: expected one number of bytes")
    length = int(values[0])
    if length > limit:
        raise VoteRefused(f"the body of {length} bytes is over the limit of {limit} bytes",
                          HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
    return length


def parse_form(raw: bytes) -> dict[str, str]:
    """A URL-encoded form (UTF-8) as ``{field: value}``.

    Raises:
        VoteRefused: (400) when it is not UTF-8, not ``name=value`` pairs, has more than
            :data:`MAX_FORM_FIELDS` fields, or repeats a field (which value would count?).
    """
    try:
        form = parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=True,
                        errors="strict", max_num_fields=MAX_FORM_FIELDS)
    except ValueError as err:  # UnicodeDecodeError included
        raise VoteRefused(f"malformed form: {str(err)[:120]}") from None
    repeated = sorted(name for name, values in form.items() if len(values) > 1)
    if repeated:
        raise VoteRefused(f"field {repeated[0][:40]!r} given {len(form[repeated[0]])} times: "
                          "send each field once")
    return {name: values[0] for name, values in form.items()}


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The inclusive ``(first, last)`` byte span that a ``Range`` header asks of a ``size``-byte file.

    Single ranges only: ``bytes=a-b``, ``bytes=a-`` and ``bytes=-n`` (the last ``n`` bytes).

    Returns:
        The span, or None to send the whole file: no header, another unit, several
        ranges, or a header that does not parse (RFC 9110 lets a server ignore those).

    Raises:
        ValueError: when the range is unsatisfiable (starts at or past the end, or asks
            for the last 0 bytes): answer 416.
    """
    match = _BYTES_RANGE.match((header or "").strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # suffix: the last n bytes
        n = int(last)
        if n == 0 or size == 0:
            raise ValueError(f"unsatisfiable range {header!r} of {size} bytes")
        return max(0, size - n), size - 1
    start = int(first)
    if last != "" and int(last) < start:
        return None  # syntactically invalid: ignored
    if start >= size:
        raise ValueError(f"unsatisfiable range {header!r} of {size} bytes")
    return start, size - 1 if last == "" else min(int(last), size - 1)
