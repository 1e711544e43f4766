"""Append-only JSONL records: a line torn by a crash is dropped, never glued to the next."""

from __future__ import annotations

import json

from clapcap.llm.jsonl import append_record, read_records


def test_torn_tail_is_cut_and_next_append_starts_clean(tmp_path, caplog):
    path = tmp_path / "c.jsonl"
    append_record(path, {"k": "a", "v": "café"})
    good = path.read_bytes()
    path.write_bytes(good + b'not json\n' + '{"k": "b", "v": "caf'.encode() + "é".encode()[:1])
    assert [r for _, r in read_records(path)] == [{"k": "a", "v": "café"}]
    assert "line 2 is not a JSON record" in caplog.text and "line 3 was cut by a crash" in caplog.text
    assert path.read_bytes() == good + b"not json\n"  # the torn fragment is gone
    append_record(path, {"k": "b", "v": "x"})
    assert [(n, r["k"]) for n, r in read_records(path)] == [(1, "a"), (3, "b")]


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"k": "a"}))
    assert read_records(path) == [(1, {"k": "a"})]
    append_record(path, {"k": "b"})
    assert [r["k"] for _, r in read_records(path)] == ["a", "b"]
    assert read_records(tmp_path / "missing.jsonl") == []
