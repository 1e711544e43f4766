"""Fuzzing the ratings CSV and the reference split read by ``make-pairs``.

Allowed outcomes: every row read (ratings: one vote per row, choices normalised; reference:
one row per clip, its first caption) or a named error (``RatingsError``/``TableError``)
giving the file and the row's 1-based file line. Never a crash or a row dropped silently.
"""

from __future__ import annotations

from pathlib import Path

import csvfuzz
import pytest
from csvfuzz import Row
from hypothesis import event, given
from hypothesis import strategies as st

from clapcap.data.csv_reader import TableError
from clapcap.pairwise.pairs import read_reference
from clapcap.pairwise.ratings import REQUIRED_COLUMNS, RatingsError, read_ratings

EXTRA = ["shown_order", "timestamp", "notes"]
CELLS = {"item_id": (["i1", "i2", "i3", " i1 "], ["", "  "]),
         "pair_id": (["a|b", "b|c", " a | b "], ["", "ab", "a|", "|b", "a|b|c", "a|a"]),
         "rater": (["r1", "r2", "gpt-4o"], ["", " "]),
         "pool": (["human", "text_llm"], [""]),
         "choice": (["A", "b", " tie ", "TIE", "B"], ["", "maybe", "C", "AB", "0"]),
         "system_a": (["a", "b", "c", ""], []), "system_b": (["a", "b", "c", ""], [])}


PAIR_OF = {"i1": "a|b", "i2": "b|c", "i3": "a|b"}  # consistent study: one pair per item
POOL_OF = {"r1": "human", "r2": "human", "gpt-4o": "text_llm"}  # and one pool per rater


@st.composite
def ratings_cases(draw):
    dropped = draw(st.sampled_from(REQUIRED_COLUMNS)) if csvfuzz.sometimes(draw, 10, "drop a column") else None
    optional = draw(st.lists(st.sampled_from(["system_a", "system_b", *EXTRA]), unique=True))
    header = list(draw(st.permutations([c for c in REQUIRED_COLUMNS if c != dropped] + optional)))
    rows = []
    if csvfuzz.sometimes(draw, 3, "random votes (conflicts likely)"):
        for _ in range(csvfuzz.n_rows(draw, 6)):
            row = Row(draw)
            rows.append({**{c: row.cell(*cells)[0] for c, cells in CELLS.items()},
                         **{c: draw(csvfuzz.CELL) for c in header if c not in CELLS}})
    else:  # a consistent study: distinct (item, rater) votes, each row may still be dirty
        keys = draw(st.lists(st.tuples(st.sampled_from(CELLS["item_id"][0]), st.sampled_from(list(POOL_OF))),
                             unique_by=lambda k: (k[0].strip(), k[1]), min_size=1, max_size=6))
        for item, rater in keys:
            row = Row(draw)
            sys_a, sys_b = draw(st.sampled_from([("", ""), ("a", "b"), ("c", "a"), (" b ", "c")]))
            rows.append({"item_id": item, "pair_id": PAIR_OF[item.strip()], "rater": rater,
                         "pool": POOL_OF[rater], "choice": row.cell(*CELLS["choice"])[0],
                         "system_a": sys_a, "system_b": sys_b,
                         **{c: draw(csvfuzz.CELL) for c in header if c not in CELLS}})
    return header, dropped, rows, draw(csvfuzz.csv_cases(header, rows))


def _systems(row: dict[str, str], has_systems: bool) -> tuple[str, str] | None:
    """The compared systems of a row, or None when the row is malformed (module docstring)."""
    if any(not row[c].strip() for c in REQUIRED_COLUMNS):
        return None
    choice = row["choice"].strip()
    if choice.upper() not in ("A", "B") and choice.lower() != "tie":
        return None
    if has_systems and row["system_a"].strip() and row["system_b"].strip():
        a, b = row["system_a"].strip(), row["system_b"].strip()
    else:
        parts = [p.strip() for p in row["pair_id"].strip().split("|")]
        if len(parts) != 2 or not all(parts):
            return None
        a, b = parts
    return None if a == b else (a, b)


def _conflicts(rows: list[dict[str, str]], lines: list[int]) -> set[int]:
    """Rows disagreeing with an earlier one: another pair for an item, a second vote, another pool."""
    first_pair, first_pool, votes, out = {}, {}, set(), set()
    for row, line in zip(rows, lines, strict=True):
        item, rater = row["item_id"].strip(), row["rater"].strip()
        if first_pair.setdefault(item, row["pair_id"].strip()) != row["pair_id"].strip():
            out.add(line)
        if first_pool.setdefault(rater, row["pool"].strip()) != row["pool"].strip():
            out.add(line)
        if (item, rater) in votes:
            out.add(line)
        votes.add((item, rater))
    return out


@given(ratings_cases())
def test_ratings_fuzz(tmp_path_factory, case_data):
    header, dropped, rows, case = case_data
    path = case.write(tmp_path_factory.getbasetemp(), "ratings")
    out, err = csvfuzz.run(lambda: read_ratings(path))
    has_systems = "system_a" in header and "system_b" in header
    systems = [_systems(r, has_systems) for r in rows]
    bad = {line for s, line in zip(systems, case.lines, strict=True) if s is None}
    if case.parse_errors:
        event("refused: malformed CSV")
        csvfuzz.assert_named_error(err, path, (RatingsError,), case.parse_errors)
    elif dropped:
        event("refused: missing column")
        csvfuzz.assert_named_error(err, path, (RatingsError,), match="missing column")
    elif not rows:
        event("refused: no rows")
        csvfuzz.assert_named_error(err, path, (RatingsError,), match="no rating rows")
    elif bad or _conflicts(rows, case.lines):
        event("refused: bad row")
        csvfuzz.assert_named_error(err, path, (RatingsError,), bad or _conflicts(rows, case.lines))
    else:
        event("read")
        csvfuzz.must_succeed(err)
        assert len(out) == len(rows)  # one vote per row, none dropped
        assert list(out["choice"]) == [r["choice"].strip().upper() if r["choice"].strip().lower() != "tie"
                                       else "tie" for r in rows]
        assert list(zip(out["system_a"], out["system_b"], strict=True)) == systems


@st.composite
def reference_cases(draw):
    dropped = draw(st.sampled_from(["clip_id", "caption"])) if csvfuzz.sometimes(draw, 10, "drop a column") else None
    optional = draw(st.lists(st.sampled_from(["audio_path", "is_audioset_eval", *EXTRA]), unique=True))
    header = list(draw(st.permutations([c for c in ("clip_id", "caption") if c != dropped] + optional)))
    rows, bad = [], []
    for _ in range(csvfuzz.n_rows(draw, 6)):
        row = Row(draw)
        clip, k1 = row.cell(["c1", "c2", "c 3", "é"], ["", "  "])
        caption, k2 = row.text()
        audio, k3 = row.cell(["", "a.wav", "sub/x.wav", "/abs/y.wav"], ["x\x00.wav"])
        if "audio_path" not in header:
            k3 = "ok"
        rows.append({"clip_id": clip, "caption": caption, "audio_path": audio,
                     **{c: draw(csvfuzz.CELL) for c in header if c not in ("clip_id", "caption", "audio_path")}})
        bad.append("bad" in (k1, k2, k3))
    return header, dropped, rows, bad, draw(csvfuzz.csv_cases(header, rows))


@given(reference_cases())
def test_reference_split_fuzz(tmp_path_factory, case_data):
    header, dropped, rows, bad_rows, case = case_data
    path = case.write(tmp_path_factory.getbasetemp(), "reference")
    out, err = csvfuzz.run(lambda: read_reference(path))
    bad = {line for b, line in zip(bad_rows, case.lines, strict=True) if b}
    if case.parse_errors:
        event("refused: malformed CSV")
        csvfuzz.assert_named_error(err, path, (TableError,), case.parse_errors)
    elif dropped:
        event("refused: missing column")
        csvfuzz.assert_named_error(err, path, (TableError,), match="missing column")
    elif bad:
        event("refused: bad row")
        csvfuzz.assert_named_error(err, path, (TableError,), bad)
    else:
        event("read")
        csvfuzz.must_succeed(err)
        first: dict[str, str] = {}
        for r in rows:  # several rows of a clip are several references; the first is kept
            first.setdefault(r["clip_id"], r["caption"])
        assert list(out.index) == sorted(first)
        assert list(out["caption"]) == [first[c] for c in sorted(first)]


# Regressions (each passed silently, or crashed, before the strict reader).
def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_ratings_row_numbers_are_file_lines_after_blank_lines(tmp_path):
    # pandas skipped the blank lines and the message said "row 3"
    path = _write(tmp_path, "item_id,pair_id,rater,pool,choice\n\ni1,a|b,r1,human,A\n\ni2,a|b,r1,human,C\n")
    with pytest.raises(RatingsError, match=r"r.csv: row 5: unknown choice 'C'"):
        read_ratings(path)


def test_ratings_row_with_a_field_too_many_is_refused(tmp_path):
    # pandas made "z" the index: the vote was read with every cell shifted, silently
    path = _write(tmp_path, "item_id,pair_id,rater,pool,choice\nz,i1,a|b,r1,human,A\n")
    with pytest.raises(RatingsError, match="row 2: expected 5 fields"):
        read_ratings(path)


def test_reference_split_row_with_an_empty_caption_is_refused(tmp_path):
    # it became the clip's reference shown to text judges
    with pytest.raises(TableError, match="r.csv: row 3: expected a clip_id, a non-empty caption"):
        read_reference(_write(tmp_path, "clip_id,caption\nc1,a dog\nc2,  \n"))


def test_reference_split_audio_path_with_nul_is_a_named_error(tmp_path):
    # Path.resolve raised a bare "ValueError: embedded null byte"
    with pytest.raises(TableError, match="r.csv: row 2: expected a clip_id"):
        read_reference(_write(tmp_path, "clip_id,caption,audio_path\nc1,a dog,x\x00.wav\n"))
