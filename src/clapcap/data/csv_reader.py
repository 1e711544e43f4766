"""Reading the project's small CSV inputs (splits, ratings, pairs, leaderboards, metadata).

:func:`read_text_table` parses strictly with the :mod:`csv` module instead of
``pandas.read_csv``, whose lenient parsing hides broken files: a row with one field too
many silently turns the first column into the index, a short row is padded with empty
cells, a duplicated column is renamed ``name.1``, an unterminated quote swallows the
following rows. Each of these is an error here, naming the file and the 1-based line.

Row numbers in every message are file lines: the header is line 1, and a record that spans
several lines (a quoted caption with a newline) is named by the line it starts on. Blank
lines are skipped but still counted. :func:`file_line` gives a table row's line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from clapcap.errors import InputError

LINES_ATTR = "file_lines"  # DataFrame.attrs key: the file line of each row
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class TableError(InputError, ValueError):
    """A CSV table is malformed (unparsable, a missing column, a bad cell).

    The message names the file and, for a row, its 1-based file line.
    """


def _decode(data: bytes, path: Path, error: type[ValueError]) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:  # err.object is the data after a byte-order mark
        before = err.object[:err.start].decode("utf-8", errors="replace")
        line = len(_LINE_BREAK.findall(before)) + 1
        raise error(f"{path}: row {line}: not UTF-8 text (byte {err.object[err.start]:#04x}); "
                    f"save the file as UTF-8") from err


def _records(text: str, path: Path, error: type[ValueError]) -> list[tuple[int, list[str]]]:
    """``(start line, fields)`` of every non-blank record."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    out: list[tuple[int, list[str]]] = []
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return out
        except csv.Error as err:
            raise error(f"{path}: row {start}: malformed CSV ({err}); a quote that opens a "
                        f"field must close it, and a field longer than "
                        f"{csv.field_size_limit()} characters is refused") from err
        if fields and not (len(fields) == 1 and not fields[0].strip()):
            out.append((start, fields))


def read_text_table(path: str | Path, what: str, *, error: type[ValueError] = TableError) -> pd.DataFrame:
    """Read a CSV with every cell as text (empty cells stay ``""``, never NaN).

    A UTF-8 byte-order mark is ignored, column names are stripped, blank lines are skipped.
    The returned frame's ``attrs["file_lines"]`` holds each row's file line (see
    :func:`file_line`).

    Raises:
        FileNotFoundError: ``"<path>: <what> not found"`` when the file does not exist.
        TableError (or ``error``, a ValueError subclass the caller chooses): naming the file
            and the 1-based line, on an empty file, bytes that are not UTF-8, a duplicated
            column name, a malformed quote, or a row whose field count differs from the
            header's.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: {what} not found")
    records = _records(_decode(path.read_bytes(), path, error), path, error)
    if not records:
        raise error(f"{path}: empty file; expected a header line naming the columns")
    header_line, header = records[0]
    header = [name.strip() for name in header]
    dup = sorted({name for name in header if header.count(name) > 1})
    if dup:
        raise error(f"{path}: row {header_line}: duplicated column name(s) {dup}")
    for line, fields in records[1:]:
        if len(fields) != len(header):
            raise error(f"{path}: row {line}: expected {len(header)} fields ({', '.join(header)}), "
                        f"found {len(fields)}; quote fields that contain commas")
    df = pd.DataFrame([fields for _, fields in records[1:]], columns=header, dtype=str)
    df.attrs[LINES_ATTR] = [line for line, _ in records[1:]]
    return df


def file_line(df: pd.DataFrame, position: int) -> int:
    """The 1-based file line of the row at ``position`` (0-based) of a table.

    Exact for a frame returned by :func:`read_text_table` (or a same-length copy); for any
    other frame it assumes a header on line 1 and one line per row (``position + 2``).
    """
    lines = df.attrs.get(LINES_ATTR)
    if lines is not None and len(lines) == len(df):
        return int(lines[position])
    return position + 2


def missing_columns(df: pd.DataFrame, required: Iterable[str]) -> list[str]:
    """The ``required`` columns absent from ``df``, in the order given."""
    return [c for c in required if c not in df.columns]
