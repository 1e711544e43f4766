"""Fuzzing the dataset readers (Clotho, AudioCaps, MusicCaps, folder) with malformed CSVs.

The only outcomes allowed: every valid row becomes a clip (with ``on_error="skip"`` a row
whose audio is missing or unreadable is listed in the report instead), or a named error
(``ManifestError``/``AudioError``) whose message gives the CSV and the row's 1-based file
line. Never a crash, a pandas error, or a row dropped or altered silently.
"""

from __future__ import annotations

from pathlib import Path

import csvfuzz
import numpy as np
import pytest
import soundfile as sf
from csvfuzz import Row
from hypothesis import event, given
from hypothesis import strategies as st

from clapcap.data.audio import AudioError
from clapcap.data.manifest import ManifestError
from clapcap.data.readers import read_audiocaps, read_clotho, read_folder, read_musiccaps

NAMED = (ManifestError, AudioError)
GOOD_STEMS = ["a", "b", "007", "123", "ü ñ", "c, d", 'q"uote'] + [f"s{i}" for i in range(13)]
MISSING_STEMS = ["zz", "x" * 300, "broken", "empty"]  # absent, too long, not audio, 0 bytes
BAD_IDS = ["", "   ", "a\x00b"]
CLOTHO_CAPTIONS = [f"caption_{i}" for i in range(1, 6)]
EXTRA_COLUMNS = ["notes", "Unnamed: 0", "", "ÿ", "timestamp"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A dataset root with a few tiny real WAVs, a corrupt one and an empty one."""
    root = tmp_path_factory.mktemp("fuzz_root")
    (root / "audio").mkdir()
    wave = (0.1 * np.sin(np.arange(800) / 5)).astype(np.float32)
    for stem in GOOD_STEMS:
        sf.write(str(root / "audio" / f"{stem}.wav"), wave, 8000)
    (root / "audio" / "broken.wav").write_bytes(b"RIFF not really a wave file")
    (root / "audio" / "empty.wav").write_bytes(b"")
    return root


@st.composite
def columns(draw, required: list[str], optional: list[str] = ()) -> tuple[list[str], str | None]:
    """Header: the columns (sometimes a required one dropped) in a random order, plus extras."""
    dropped = draw(st.sampled_from(required)) if csvfuzz.sometimes(draw, 10, "drop a column") else None
    extra = draw(st.lists(st.sampled_from(EXTRA_COLUMNS), max_size=2, unique=True))
    header = [c for c in required if c != dropped] + list(optional) + extra
    if not [c for c in header if c]:  # a header line needs a name (else a data row becomes it)
        header.append("notes")
    return list(draw(st.permutations(header))), dropped


def _check(case, path, err, *, dropped, bad, missing, on_error, what="missing column") -> bool:
    """Assert the refusals; True when the reader had to succeed (the caller checks the rows)."""
    if case.parse_errors:
        event("refused: malformed CSV")
        csvfuzz.assert_named_error(err, path, (ManifestError,), case.parse_errors)
    elif dropped:
        event("refused: missing column")
        csvfuzz.assert_named_error(err, path, (ManifestError,), match=what)
    elif not case.lines:
        event("refused: no data rows")
        csvfuzz.assert_named_error(err, path, (ManifestError,), match="no data rows")
    elif bad:
        event("refused: bad row")
        csvfuzz.assert_named_error(err, path, (ManifestError,), bad)
    elif missing and on_error == "raise":
        event("refused: missing audio")
        csvfuzz.assert_named_error(err, path, (AudioError,), missing)
    else:
        event("read" + (" with skipped audio" if missing else ""))
        csvfuzz.must_succeed(err)
        return True
    return False


def _duplicates(keys: list[str | None], lines: list[int]) -> set[int]:
    """Lines whose (valid) key already appeared on an earlier row."""
    seen, out = set(), set()
    for key, line in zip(keys, lines, strict=True):
        if key is not None and key in seen:
            out.add(line)
        seen.add(key)
    return out


@st.composite
def clotho_cases(draw):
    header, dropped = draw(columns(["file_name", *CLOTHO_CAPTIONS]))
    rows, spec = [], []
    for _ in range(csvfuzz.n_rows(draw, 5)):
        row = Row(draw)
        name, kind = row.cell([f"{s}.wav" for s in GOOD_STEMS], BAD_IDS + ["."],
                              [f"{s}.wav" for s in MISSING_STEMS] + ["sub/none.wav"])
        cells = [row.text() for _ in CLOTHO_CAPTIONS]  # a blank caption refuses the row
        caps = [cap for cap, _ in cells]
        rows.append({"file_name": name, **dict(zip(CLOTHO_CAPTIONS, caps, strict=True)),
                     **{c: draw(csvfuzz.CELL) for c in header if c in EXTRA_COLUMNS}})
        blank = any(k == "bad" for _, k in cells)
        spec.append((name, "bad" if blank else kind, [c.strip() for c in caps]))
    return header, dropped, rows, spec, draw(csvfuzz.csv_cases(header, rows))


@given(clotho_cases(), st.sampled_from(["raise", "skip"]))
def test_clotho_fuzz(root, tmp_path_factory, case_data, on_error):
    header, dropped, rows, spec, case = case_data
    path = case.write(tmp_path_factory.getbasetemp(), "clotho")
    result, err = csvfuzz.run(lambda: read_clotho(root, path, on_error=on_error))
    stems = [Path(n).stem if k != "bad" else None for n, k, _ in spec]
    bad = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "bad"}
    bad |= _duplicates(stems, case.lines)
    missing = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "missing"}
    if _check(case, path, err, dropped=dropped, bad=bad, missing=missing, on_error=on_error):
        df, report = result
        kept = [(Path(n).stem, caps) for n, k, caps in spec if k == "ok"]
        assert list(zip(df["clip_id"], df["captions"], strict=True)) == kept
        assert len(report.skipped) == len(missing)


@st.composite
def audiocaps_cases(draw):
    required = ["audiocap_id", "youtube_id", "start_time", "caption"]
    header, dropped = draw(columns(required))
    rows, spec = [], []
    for _ in range(csvfuzz.n_rows(draw, 6)):
        row = Row(draw)
        cells = {"audiocap_id": row.cell(["1", "0", "-5", " 42 ", "007"], ["", "x", "1.5", "1e3", "nan"]),
                 "youtube_id": row.cell(GOOD_STEMS, BAD_IDS, MISSING_STEMS),
                 "start_time": row.cell(["0", "30", "1.5", "-2", "1e3", " 7 "], ["", "x", "nan", "inf"]),
                 "caption": row.text()}
        rows.append({**{k: v for k, (v, _) in cells.items()},
                     **{c: draw(csvfuzz.CELL) for c in header if c in EXTRA_COLUMNS}})
        kinds = {k for _, k in cells.values()}
        spec.append((cells["youtube_id"][0], "bad" if "bad" in kinds else kinds.pop() if len(kinds) == 1
                     else "missing", cells["caption"][0].strip()))
    return header, dropped, rows, spec, draw(csvfuzz.csv_cases(header, rows))


def _audiocaps_conflicts(rows: list[dict], spec: list[tuple], lines: list[int]) -> set[int]:
    """Lines of a row (with valid cells) whose audiocap_id an earlier row has, or whose
    youtube_id an earlier row gave another start_time."""
    ids, starts, out = set(), {}, set()
    for row, (ytid, kind, _), line in zip(rows, spec, lines, strict=True):
        if kind == "bad":
            continue
        cap, start = int(row["audiocap_id"].strip()), float(row["start_time"].strip())
        if cap in ids or starts.setdefault(ytid, start) != start:
            out.add(line)
        ids.add(cap)
    return out


@given(audiocaps_cases(), st.sampled_from(["raise", "skip"]))
def test_audiocaps_fuzz(root, tmp_path_factory, case_data, on_error):
    header, dropped, rows, spec, case = case_data
    path = case.write(tmp_path_factory.getbasetemp(), "audiocaps")
    result, err = csvfuzz.run(lambda: read_audiocaps(root, path, on_error=on_error))
    bad = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "bad"}
    bad |= _audiocaps_conflicts(rows, spec, case.lines)
    missing = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "missing"}
    if _check(case, path, err, dropped=dropped, bad=bad, missing=missing, on_error=on_error):
        df, report = result
        clips: dict[str, list[str]] = {}
        for ytid, _, caption in spec:  # one clip per youtube_id, its captions in file order
            clips.setdefault(ytid, []).append(caption)
        kept = [(y, caps) for y, caps in clips.items() if y not in MISSING_STEMS]
        assert list(zip(df["clip_id"], df["captions"], strict=True)) == kept
        assert len(report.skipped) == len(clips) - len(kept)


ASPECTS_OK = ["", "[]", "['a', 'b']", "('x',)", '["q,uote", "é"]', "['sp'] "]
ASPECTS_BAD = ["5", "'abc'", "[1]", "[", "{[]: 1}", "['a'", "[" * 300 + "]" * 300, "-" * 3000 + "1"]
FLAGS = (["True", "false", "1", "0", " TRUE "], ["", "yes", "2", "None"])
NUMBERS = (["0", "10", "2.5", "1e1"], ["", "x", "nan", "-inf"])


@st.composite
def musiccaps_cases(draw):
    required = ["ytid", "start_s", "end_s", "aspect_list", "caption", "is_audioset_eval",
                "is_balanced_subset"]
    header, dropped = draw(columns(required))
    rows, spec = [], []
    for _ in range(csvfuzz.n_rows(draw, 5)):
        row = Row(draw)
        cells = {"ytid": row.cell(GOOD_STEMS, BAD_IDS, MISSING_STEMS), "start_s": row.cell(*NUMBERS),
                 "end_s": row.cell(*NUMBERS), "aspect_list": row.cell(ASPECTS_OK, ASPECTS_BAD),
                 "caption": row.text(), "is_audioset_eval": row.cell(*FLAGS),
                 "is_balanced_subset": row.cell(*FLAGS)}
        rows.append({**{k: v for k, (v, _) in cells.items()},
                     **{c: draw(csvfuzz.CELL) for c in header if c in EXTRA_COLUMNS}})
        kinds = {k for _, k in cells.values()}
        spec.append((cells["ytid"][0], "bad" if "bad" in kinds else kinds.pop() if len(kinds) == 1
                     else "missing", cells["caption"][0].strip()))
    return header, dropped, rows, spec, draw(csvfuzz.csv_cases(header, rows))


@given(musiccaps_cases(), st.sampled_from(["raise", "skip"]))
def test_musiccaps_fuzz(root, tmp_path_factory, case_data, on_error):
    header, dropped, rows, spec, case = case_data
    path = case.write(tmp_path_factory.getbasetemp(), "musiccaps")
    result, err = csvfuzz.run(lambda: read_musiccaps(root, path, on_error=on_error))
    bad = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "bad"}
    bad |= _duplicates([y if k != "bad" else None for y, k, _ in spec], case.lines)
    missing = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "missing"}
    if _check(case, path, err, dropped=dropped, bad=bad, missing=missing, on_error=on_error):
        df, report = result
        kept = [(y, [c]) for y, k, c in spec if k == "ok"]
        assert list(zip(df["clip_id"], df["captions"], strict=True)) == kept
        assert len(report.skipped) == len(missing)


FOLDER_CAPTIONS = ["caption", "caption_1", "caption_2", "caption_en"]


@st.composite
def folder_cases(draw):
    caption_cols = [] if csvfuzz.sometimes(draw, 10, "no caption column") else \
        draw(st.lists(st.sampled_from(FOLDER_CAPTIONS), min_size=1, max_size=3, unique=True))
    optional = draw(st.lists(st.sampled_from(["split", "labels"]), unique=True))
    header, dropped = draw(columns(["file_name"], [*caption_cols, *optional]))
    rows, spec = [], []
    for _ in range(csvfuzz.n_rows(draw, 5)):
        row = Row(draw)
        name, kind = row.cell([f"audio/{s}.wav" for s in GOOD_STEMS], BAD_IDS + ["."],
                              [f"audio/{s}.wav" for s in MISSING_STEMS] + ["nowhere.wav"])
        split, split_kind = row.cell(["", "train", "val", "test", " test "], ["foo", "Train", "TEST"])
        caps = {c: row.text(blank_is_bad=False)[0] for c in header if c.startswith("caption")}
        rows.append({"file_name": name, "split": split, "labels": draw(csvfuzz.CELL), **caps,
                     **{c: draw(csvfuzz.CELL) for c in header if c in EXTRA_COLUMNS}})
        stripped = [v.strip() for v in caps.values() if v.strip()]
        if not stripped or ("split" in header and split_kind == "bad"):
            kind = "bad"
        spec.append((name, kind, stripped))
    return header, dropped, rows, spec, draw(csvfuzz.csv_cases(header, rows))


@given(folder_cases(), st.sampled_from(["raise", "skip"]))
def test_folder_fuzz(root, tmp_path_factory, case_data, on_error):
    header, dropped, rows, spec, case = case_data
    path = case.write(tmp_path_factory.getbasetemp(), "folder")
    result, err = csvfuzz.run(lambda: read_folder(root, path, on_error=on_error))
    bad = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "bad"}
    bad |= _duplicates([_folder_id(n) if k != "bad" else None for n, k, _ in spec], case.lines)
    missing = {line for (_, k, _), line in zip(spec, case.lines, strict=True) if k == "missing"}
    what = "missing column"
    if not dropped and case.lines and not any(c.startswith("caption") for c in header):
        dropped, what = "caption", "no caption column"
    if _check(case, path, err, dropped=dropped, bad=bad, missing=missing, on_error=on_error, what=what):
        df, report = result
        kept = [(_folder_id(n), caps) for n, k, caps in spec if k == "ok"]
        assert list(zip(df["clip_id"], df["captions"], strict=True)) == kept
        assert len(report.skipped) == len(missing)


def _folder_id(name: str) -> str:
    """A folder clip's id: its file name relative to the root, without the extension."""
    return str(Path(name).with_suffix(""))


# Regressions: minimal examples of the defects the fuzzing found (each failed before).
CLOTHO_HEADER = "file_name,caption_1,caption_2,caption_3,caption_4,caption_5\n"
MORE = ",c2,c3,c4,c5"  # captions 2-5 of a Clotho row
MUSICCAPS_HEADER = "ytid,start_s,end_s,aspect_list,caption,is_audioset_eval,is_balanced_subset\n"


def _csv(tmp_path: Path, text: str, name: str = "meta.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_numeric_looking_ids_and_captions_stay_text(root, tmp_path):
    # pandas typed the columns: file_name 123 crashed Path() with a TypeError, youtube_id
    # 007 became clip "7" (file not found) and caption "1.50" became "1.5"
    df, _ = read_clotho(root, _csv(tmp_path, CLOTHO_HEADER + "123.wav,1.50,007,3,4,5\n"))
    assert df["captions"].tolist() == [["1.50", "007", "3", "4", "5"]]
    df, _ = read_clotho(root, _csv(tmp_path, CLOTHO_HEADER + f"123,x{MORE}\n"), on_error="skip")
    assert df.empty  # "audio/123" is not a file: skipped and reported, not a TypeError
    df, _ = read_audiocaps(root, _csv(tmp_path, "audiocap_id,youtube_id,start_time,caption\n1,007,0,a dog\n"))
    assert df["clip_id"].tolist() == ["007"] and df["audio_path"].tolist() == ["audio/007.wav"]


def test_a_row_with_one_field_too_many_is_refused_not_shifted(root, tmp_path):
    # pandas made file_name the index and read the first caption as the file name
    with pytest.raises(ManifestError, match=r"meta.csv: row 2: expected 6 fields"):
        read_clotho(root, _csv(tmp_path, CLOTHO_HEADER + "a.wav,x,x,x,x,x,x\n"))


@pytest.mark.parametrize("reader, text", [
    (read_clotho, CLOTHO_HEADER + f"a.wav,x{MORE}\nb.wav,y{MORE}\na.wav,z{MORE}\n"),
    (read_folder, "file_name,caption\na.wav,x\naudio/b.wav,y\na.flac,z\n"),
    (read_musiccaps, MUSICCAPS_HEADER + "a,0,1,[],x,True,False\nb,0,1,[],y,True,False\na,0,1,[],z,True,False\n"),
])
def test_a_clip_listed_twice_is_refused(root, tmp_path, reader, text):
    # both rows became manifest rows with the same clip_id
    with pytest.raises(ManifestError, match=r"meta.csv: row 4: clip 'a' is already on row 2"):
        reader(root, _csv(tmp_path, text))


@pytest.mark.parametrize("text, message", [
    ("1x,a,0,a dog\n", "row 2: audiocap_id must be an integer, found '1x'"),
    ("1,a,soon,a dog\n", "row 2: start_time must be a finite number, found 'soon'"),
    ("1,a,0,a dog\n2,a,0,  \n", r"row 3 \(a\): empty caption"),  # was dropped silently
])
def test_audiocaps_bad_cells_name_the_row(root, tmp_path, text, message):
    with pytest.raises(ManifestError, match=message):
        read_audiocaps(root, _csv(tmp_path, "audiocap_id,youtube_id,start_time,caption\n" + text))


@pytest.mark.parametrize("aspects, start, message", [
    ("5", "0", "aspect_list must be a list of strings, found '5'"),  # was TypeError
    ("'abc'", "0", "aspect_list must be a list of strings"),  # was read as ['a', 'b', 'c']
    ('"{[]: 1}"', "0", "aspect_list is not a list literal"),  # was TypeError
    ("[]", "soon", "start_s must be a finite number, found 'soon'"),  # was a bare ValueError
])
def test_musiccaps_bad_cells_name_the_row(root, tmp_path, aspects, start, message):
    text = MUSICCAPS_HEADER + f"a,{start},10,{aspects},a cello,True,False\n"
    with pytest.raises(ManifestError, match=r"meta.csv: row 2 \(a\): " + message.replace("[", r"\[")):
        read_musiccaps(root, _csv(tmp_path, text))


def test_folder_unknown_split_names_the_row(root, tmp_path):
    # accepted by the reader, then refused by write_manifest without a row
    with pytest.raises(ManifestError, match=r"meta.csv: row 3 \(audio/b.wav\): split must be one of"):
        read_folder(root, _csv(tmp_path, "file_name,caption,split\naudio/a.wav,x,test\naudio/b.wav,y,foo\n"))


def test_row_numbers_are_one_based_file_lines(root, tmp_path):
    # messages said "row 0" for the first data row; blank lines and multiline captions count
    text = CLOTHO_HEADER + f'\na.wav,"two\nlines"{MORE}\nb.wav,,,,,\n'
    with pytest.raises(ManifestError, match=r"meta.csv: row 5 \(b.wav\): no non-empty caption"):
        read_clotho(root, _csv(tmp_path, text))


def test_unusable_file_names_are_named_errors(root, tmp_path):
    # a name too long for the filesystem raised OSError; a NUL raised "embedded null byte"
    long = "x" * 300 + ".wav"
    with pytest.raises(AudioError, match=r"cannot access .*\(clip 'x+', listed in .*meta.csv: row 2\)"):
        read_clotho(root, _csv(tmp_path, CLOTHO_HEADER + f"{long},x{MORE}\n"))
    df, report = read_clotho(root, _csv(tmp_path, CLOTHO_HEADER + f"{long},x{MORE}\n"), on_error="skip")
    assert df.empty and len(report.skipped) == 1
    with pytest.raises(ManifestError, match="meta.csv: row 2: file_name must be a non-empty name without NUL"):
        read_clotho(root, _csv(tmp_path, CLOTHO_HEADER + f"a\x00.wav,x{MORE}\n"))


def test_audio_errors_name_the_csv_row(root, tmp_path):
    with pytest.raises(AudioError, match=r"missing.wav: file not found \(clip 'missing', listed in .*meta.csv: row 3\)"):
        read_clotho(root, _csv(tmp_path, CLOTHO_HEADER + f"a.wav,x{MORE}\nmissing.wav,y{MORE}\n"))
    with pytest.raises(ManifestError, match=r"meta.csv: row 2: audio_path .* resolves outside"):
        read_folder(root, _csv(tmp_path, "file_name,caption\n../elsewhere.wav,x\n"))


@pytest.mark.parametrize("text, message", [
    ("", "empty file; expected a header line"),  # was pandas' EmptyDataError
    (CLOTHO_HEADER, "no data rows after the header"),  # was an empty frame without columns
    ('file_name,caption_1,caption_2,caption_3,caption_4,caption_5\na.wav,"open,,,,\n',
     "row 2: malformed CSV"),  # was pandas' ParserError without the file
])
def test_unreadable_files_are_manifest_errors(root, tmp_path, text, message):
    with pytest.raises(ManifestError, match=message):
        read_clotho(root, _csv(tmp_path, text))
