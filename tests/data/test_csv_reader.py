"""The shared strict CSV reader (clapcap.data.csv_reader): fuzzed files and the defects it fixed."""

from __future__ import annotations

from pathlib import Path

import csvfuzz
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clapcap.data.csv_reader import TableError, file_line, read_text_table

NAMES = ["a", "b", "caption", "é ü", "x y", "Unnamed: 0", "", "with,comma", 'q"uote']


@st.composite
def tables(draw):
    header = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=4, unique=True))
    n_rows = draw(st.integers(0, 5))
    rows = [{h: draw(csvfuzz.CELL) for h in header} for _ in range(n_rows)]
    return header, rows, draw(csvfuzz.csv_cases(header, rows))


@given(tables())
def test_fuzzed_csv_reads_every_row_exactly_or_names_the_line(tmp_path_factory, table):
    header, rows, case = table
    path = case.write(tmp_path_factory.getbasetemp())
    df, err = csvfuzz.run(lambda: read_text_table(path, "table"))
    if case.parse_errors:
        csvfuzz.assert_named_error(err, path, (TableError,), case.parse_errors)
        return
    csvfuzz.must_succeed(err)
    assert list(df.columns) == header
    assert df.to_dict("records") == rows  # no row dropped, no cell altered (types, NaN, quotes)
    assert [file_line(df, i) for i in range(len(df))] == case.lines


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "t.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


# Regressions: each of these passed through pandas.read_csv silently or with its own error.
def test_a_row_with_one_field_too_many_is_an_error_not_a_shifted_index(tmp_path):
    # pandas made the first column the index and shifted every cell one column left
    path = _write(tmp_path, "item_id,choice\nz,i1,A\n")
    with pytest.raises(TableError, match=r"t.csv: row 2: expected 2 fields \(item_id, choice\), found 3"):
        read_text_table(path, "table")


def test_a_short_row_is_an_error_not_padded(tmp_path):
    path = _write(tmp_path, "clip_id,caption,is_audioset_eval\nc1,a dog barks,True\nc2,a cat\n")
    with pytest.raises(TableError, match="row 3: expected 3 fields"):
        read_text_table(path, "table")


def test_a_duplicated_column_is_an_error_not_renamed(tmp_path):
    # pandas renamed the second 'caption' to 'caption.1'
    with pytest.raises(TableError, match=r"row 1: duplicated column name\(s\) \['caption'\]"):
        read_text_table(_write(tmp_path, "clip_id,caption,caption \nc1,x,y\n"), "table")


def test_an_unterminated_quote_names_the_row_it_opens_on(tmp_path):
    path = _write(tmp_path, 'a,b\n1,x\n2,"never closed\n3,y\n')
    with pytest.raises(TableError, match=r"t.csv: row 3: malformed CSV"):
        read_text_table(path, "table")


@pytest.mark.parametrize("content", ["", "\n\n", "\ufeff"])
def test_an_empty_file_is_a_named_error(tmp_path, content):
    with pytest.raises(TableError, match="t.csv: empty file; expected a header line"):
        read_text_table(_write(tmp_path, content), "table")


def test_bytes_that_are_not_utf8_name_the_line(tmp_path):
    # after a byte-order mark too (the decoder's offsets then skip the mark)
    path = _write(tmp_path, b"\xef\xbb\xbfa,b\n1,2\n3,caf\xe9\n")
    with pytest.raises(TableError, match=r"t.csv: row 3: not UTF-8 text \(byte 0xe9\)"):
        read_text_table(path, "table")


def test_rows_keep_their_file_lines_across_blank_lines_and_multiline_cells(tmp_path):
    path = _write(tmp_path, '\ufeffa,b\r\n\r\n1,"two\r\nlines"\r\n   \r\n2,"x"\r\n')
    df = read_text_table(path, "table")
    assert df.to_dict("records") == [{"a": "1", "b": "two\r\nlines"}, {"a": "2", "b": "x"}]
    assert [file_line(df, i) for i in range(2)] == [3, 6]
