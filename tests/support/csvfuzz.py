"""Hypothesis strategies that write (often malformed) CSV files, for the reader fuzz tests.

A test builds a table (header + rows of cells, with what each row should yield), then
:func:`csv_cases` renders it with a drawn layout (byte-order mark, CRLF, quoting, blank and
whitespace-only lines, a missing final newline) and, sometimes, parse-level defects (a row
with a field too many or too few, a non-UTF-8 byte, a field over the csv module's size
limit, an unterminated quote, a duplicated column). The case knows the 1-based file line
each data row starts on (the header is line 1 unless blank lines precede it), so a test can
check that an error names the right line.

Lives in ``tests/support``, which pytest puts on ``sys.path`` (``pythonpath`` in pyproject.toml).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_COUNTER = itertools.count()

# Cell text: any unicode but surrogates (not encodable), plus the cases that break CSV code.
TRICKY = ['"', '""', "a,b", 'say "hi", then go', "two\nlines", "cr\rand\r\ncrlf", " padded ",
          "\ufeffbom inside", "é ü 日本語 🎵", "'single'", "\t", "=1+1", "NaN", "None", "null",
          "#comment", "\\", "\x00nul", "1.50", "007", "True"]
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
LONG_TEXT = st.integers(2_000, 30_000).map(lambda n: ('long, "quoted"\nfield; ' * (n // 20 + 1))[:n])
CELL = st.one_of(TEXT, st.sampled_from(TRICKY), TEXT, LONG_TEXT)
HUGE_FIELD = 140_000  # over csv.field_size_limit() (131072): a named error, not a crash


def sometimes(draw, one_in: int, label: str) -> bool:
    """True about once in ``one_in`` draws; shrinks to False (hypothesis favours small ints)."""
    return draw(st.integers(1, one_in), label=label) == one_in


def n_rows(draw, most: int = 6) -> int:
    """How many data rows: 1..most, and now and then none."""
    return 0 if sometimes(draw, 12, "no data rows") else draw(st.integers(1, most), label="rows")


@dataclass
class CsvCase:
    """A rendered CSV: its bytes and where each data row starts."""

    data: bytes
    lines: list[int]  # file line of each data row (1-based)
    parse_errors: set[int] = field(default_factory=set)  # lines a strict parser must refuse

    def write(self, folder: Path, name: str = "table") -> Path:
        path = folder / f"{name}_{next(_COUNTER)}.csv"
        path.write_bytes(self.data)
        return path


def _quote(value: str, quote_all: bool) -> str:
    if quote_all or any(c in value for c in ',"\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _is_blank(values: list[str]) -> bool:
    # a record of one blank field reads as a blank line (skipped), not as a short row
    return len(values) == 1 and not values[0].strip()


@st.composite
def csv_cases(draw, header: list[str], rows: list[dict[str, str]], *, defects: bool = True) -> CsvCase:
    """Render ``rows`` (cells keyed by ``header``; absent keys are empty) as CSV bytes."""
    newline = draw(st.sampled_from(["\n", "\r\n"]), label="newline")
    quote_all = draw(st.booleans(), label="quote_all")
    header = list(header)
    records = [[r.get(name, "") for name in header] for r in rows]
    broken = defects and sometimes(draw, 4, "parse defects")
    kinds: list[str | None] = [None] * len(records)
    if broken and draw(st.booleans(), label="duplicate a column"):
        name = draw(st.sampled_from(header)) if header else "x"
        header.append(name + draw(st.sampled_from(["", " "])))  # names are stripped
        for rec in records:
            rec.append("dup")
        kinds = [None] * len(records)
        dup_header = True
    else:
        dup_header = False
    if broken and records:
        options = ["extra", "short", "utf8", "huge"]
        kinds = draw(st.lists(st.one_of(st.none(), st.sampled_from(options)),
                              min_size=len(records), max_size=len(records)), label="row defects")
        if draw(st.booleans(), label="unterminated quote on the last row"):
            kinds[-1] = "open_quote"
    pieces: list[bytes] = []
    text_so_far = ""

    def emit(text: str, prefix: bytes = b"") -> None:
        nonlocal text_so_far
        pieces.append(prefix + text.encode("utf-8"))
        text_so_far += text

    if draw(st.booleans(), label="byte-order mark"):
        pieces.append(b"\xef\xbb\xbf")
    for _ in range(draw(st.integers(0, 1), label="blank lines before the header")):
        emit(newline)
    header_line = len(_LINE_BREAK.findall(text_so_far)) + 1
    emit(",".join(_quote(h, quote_all) for h in header) + newline)
    lines, parse_errors = [], set()
    if dup_header:
        parse_errors.add(header_line)
    blanks = st.lists(st.sampled_from(["", "   "]), max_size=2)
    for i, (rec, kind) in enumerate(zip(records, kinds, strict=True)):
        for blank in draw(blanks, label="blank lines") if sometimes(draw, 4, "blank lines") else []:
            emit(blank + newline)
        line = len(_LINE_BREAK.findall(text_so_far)) + 1
        lines.append(line)
        fields = [_quote(v, quote_all) for v in rec]
        prefix = b""
        if kind == "extra":
            fields.append(_quote(draw(TEXT), quote_all))
        elif kind == "short":
            fields = fields[:-1] if len(rec) > 1 and not _is_blank(rec[:-1]) else [*fields, "x"]
        elif kind == "utf8":
            prefix = b"\xff"
        elif kind == "huge":
            fields[0] = "h" * HUGE_FIELD
        elif kind == "open_quote":
            fields[-1] = '"' + rec[-1].replace('"', '""')  # never closed
        if kind is not None:
            parse_errors.add(line)
        last = i == len(records) - 1
        end = "" if last and (kind == "open_quote" or not draw(st.booleans(), label="final newline")) \
            else newline
        emit(",".join(fields) + end, prefix)
    return CsvCase(b"".join(pieces), lines, parse_errors)


def pick(ok: list[str], bad: list[str] = (), missing: list[str] = ()) -> st.SearchStrategy[tuple[str, str]]:
    """``(value, category)``: mostly a good value, sometimes a bad or missing-audio one."""
    options = [st.sampled_from(ok).map(lambda v: (v, "ok"))] * 4
    if bad:
        options.append(st.sampled_from(list(bad)).map(lambda v: (v, "bad")))
    if missing:
        options.append(st.sampled_from(list(missing)).map(lambda v: (v, "missing")))
    return st.one_of(*options)


def text_cell(blank_is_bad: bool = True) -> st.SearchStrategy[tuple[str, str]]:
    """A free-text cell (captions): ``bad`` when blank after stripping and that matters."""
    return CELL.map(lambda v: (v, "bad" if blank_is_bad and not v.strip() else "ok"))


class Row:
    """Draws the cells of one row: a clean row only takes good values, a dirty one anything."""

    def __init__(self, draw):
        self.draw = draw
        self.dirty = sometimes(draw, 4, "dirty row")

    def cell(self, ok: list[str], bad: list[str] = (), missing: list[str] = ()) -> tuple[str, str]:
        return self.draw(pick(ok, bad if self.dirty else (), missing))

    def text(self, blank_is_bad: bool = True) -> tuple[str, str]:
        if self.dirty:
            return self.draw(text_cell(blank_is_bad))
        return self.draw(CELL.map(lambda v: v if v.strip() else v + "x")), "ok"


def run(call: Callable[[], object]) -> tuple[object, BaseException | None]:
    """The call's result, or the ValueError/FileNotFoundError it raised; anything else escapes."""
    try:
        return call(), None
    except (ValueError, FileNotFoundError) as err:
        return None, err


def error_line(err: BaseException, path: Path) -> int:
    """The row a message names after ``<path>: row``; fails the test when there is none."""
    found = re.search(re.escape(str(path)) + r": row (\d+)", str(err))
    assert found, f"the message names no file and row: {err}"
    return int(found.group(1))


def assert_named_error(err: BaseException | None, path: Path, types: tuple[type, ...],
                       lines: set[int] | None = None, match: str | None = None) -> None:
    """``err`` is one of the project's ``types``, names ``path`` and, given ``lines``, one of them."""
    assert err is not None, f"accepted a malformed file (expected an error on rows {lines})"
    assert isinstance(err, types) and type(err).__module__.startswith("clapcap"), \
        f"not a named project error: {type(err).__module__}.{type(err).__name__}: {err}"
    assert str(path) in str(err), f"the message does not name the file: {err}"
    if lines is not None:
        assert error_line(err, path) in lines, f"names row {error_line(err, path)}, expected one of {sorted(lines)}: {err}"
    if match is not None:
        assert match in str(err), f"expected {match!r} in: {err}"


def must_succeed(err: BaseException | None) -> None:
    assert err is None, f"refused a valid file: {type(err).__name__}: {err}"
