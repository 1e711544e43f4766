"""Fuzzing the reference captioners' split CSV (clapcap.evaluation.shared_split.read_split).

Allowed outcomes: every row read as one reference of its clip (clips in file order), or a
``TableError`` naming the file and the row's 1-based file line. Never a crash or a row
dropped silently.
"""

from __future__ import annotations

import csvfuzz
import pytest
from csvfuzz import Row
from hypothesis import event, given
from hypothesis import strategies as st

from clapcap.data.csv_reader import TableError
from clapcap.evaluation.shared_split import SPLIT_COLUMNS, read_split

FLAGS = {"": None, "nan": None, "none": None, "true": True, "1": True, "false": False, "0": False}


def _flag(text: str) -> bool | None | str:
    return FLAGS.get(text.strip().lower(), "bad")


@st.composite
def split_cases(draw):
    dropped = draw(st.sampled_from(SPLIT_COLUMNS)) if csvfuzz.sometimes(draw, 10, "drop a column") else None
    optional = draw(st.lists(st.sampled_from(["audio_path", "notes"]), unique=True))
    header = list(draw(st.permutations([c for c in SPLIT_COLUMNS if c != dropped] + optional)))
    rows = []
    for _ in range(csvfuzz.n_rows(draw, 6)):
        row = Row(draw)
        rows.append({"clip_id": row.cell(["c1", "c2", " c1 ", "日本"], ["", "  "])[0],
                     "caption": row.text()[0],
                     "is_audioset_eval": row.cell(["", "True", "false", "1", " TRUE ", "NaN"], ["yes", "2"])[0],
                     "audio_path": draw(csvfuzz.CELL), "notes": draw(csvfuzz.CELL)})
    return header, dropped, rows, draw(csvfuzz.csv_cases(header, rows))


def _first_bad_line(rows: list[dict[str, str]], lines: list[int]) -> int | None:
    """The row read_split must stop at: a blank id/caption, a bad flag, or a clip's flag changing."""
    flags: dict[str, object] = {}
    for row, line in zip(rows, lines, strict=True):
        clip, flag = row["clip_id"].strip(), _flag(row["is_audioset_eval"])
        if not clip or not row["caption"].strip() or flag == "bad" or flags.setdefault(clip, flag) != flag:
            return line
    return None


@given(split_cases())
def test_split_fuzz(tmp_path_factory, case_data):
    header, dropped, rows, case = case_data
    path = case.write(tmp_path_factory.getbasetemp(), "split")
    split, err = csvfuzz.run(lambda: read_split(path))
    bad = _first_bad_line(rows, case.lines)
    if case.parse_errors:
        event("refused: malformed CSV")
        csvfuzz.assert_named_error(err, path, (TableError,), case.parse_errors)
    elif dropped:
        event("refused: missing column")
        csvfuzz.assert_named_error(err, path, (TableError,), match="missing column")
    elif not rows:
        event("refused: no rows")
        csvfuzz.assert_named_error(err, path, (TableError,), match="no rows")
    elif bad is not None:
        event("refused: bad row")
        csvfuzz.assert_named_error(err, path, (TableError,), {bad})
    else:
        event("read")
        csvfuzz.must_succeed(err)
        clips: dict[str, list[str]] = {}
        for r in rows:  # every row is one reference of its clip, kept verbatim
            clips.setdefault(r["clip_id"].strip(), []).append(r["caption"])
        assert split.references == clips
        assert split.flags == {r["clip_id"].strip(): _flag(r["is_audioset_eval"]) for r in rows}


def test_a_short_split_row_is_refused_not_read_as_an_empty_flag(tmp_path):
    # pandas padded the missing is_audioset_eval with "" and the row was read as "unknown"
    path = tmp_path / "split.csv"
    path.write_text("clip_id,caption,is_audioset_eval\nc1,a dog barks,True\nc2,a cat\n")
    with pytest.raises(TableError, match=r"split.csv: row 3: expected 3 fields"):
        read_split(path)


def test_split_row_numbers_count_the_lines_of_multiline_captions(tmp_path):
    path = tmp_path / "split.csv"
    path.write_text('clip_id,caption,is_audioset_eval\nc1,"a dog\nbarks",True\nc1,a cat,False\n')
    with pytest.raises(TableError, match=r"split.csv: row 4: clip 'c1' has is_audioset_eval=False"):
        read_split(path)
