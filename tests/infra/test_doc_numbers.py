"""tools/doc_numbers.py: a doc number that names a build file must equal it; a strict doc's
number must name a file or the build it was measured on."""

from __future__ import annotations

import json

import doc_numbers


def _tree(tmp_path, doc: str, name: str = "docs/captioning.md"):
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "m.json").write_text(json.dumps({"t2a": {"r@10": 0.43571, "n/a": [3, 1234.7]}}))
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "t.md").write_text("| a | b |\n|---|---|\n| 1 | 2 |\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("nothing\n")
    (tmp_path / name).write_text(doc)
    return tmp_path / name


def _messages(tmp_path):
    return [p.message for p in doc_numbers.process(tmp_path, write=False)]


def test_an_inline_number_is_checked_and_rewritten(tmp_path):
    doc = _tree(tmp_path, "R@10 is 0.437<!-- build:metrics/m.json#/t2a/r@10 --> and +1,234<!-- build:metrics/m.json#/t2a/n~1a/1 -->.\n")
    messages = _messages(tmp_path)
    assert len(messages) == 2 and "0.437 is stale" in messages[0] and "(0.436)" in messages[0]
    assert "+1,234 is stale" in messages[1] and "(+1,235)" in messages[1]  # sign and commas kept
    assert doc_numbers.main(["--root", str(tmp_path)]) == 0  # rewritten from the file
    assert "0.436<!-- build:metrics/m.json#/t2a/r@10 -->" in doc.read_text()
    assert "+1,235<!-- build:metrics/m.json#/t2a/n~1a/1 -->" in doc.read_text()
    assert _messages(tmp_path) == []


def test_a_block_must_equal_its_file_and_a_missing_source_is_named(tmp_path):
    doc = _tree(tmp_path, "<!-- build:begin reports/t.md -->\n| a | b |\n|---|---|\n| 1 | 3 |\n<!-- build:end -->\n"
                          "x 0.5<!-- build:metrics/gone.json#/v -->\n")
    messages = _messages(tmp_path)
    assert any("differs from reports/t.md" in m for m in messages)
    assert any("gone.json" in m for m in messages)
    doc_numbers.process(tmp_path, write=True)
    assert "| 1 | 2 |" in doc.read_text()


def test_a_strict_doc_names_the_source_of_each_decimal(tmp_path):
    _tree(tmp_path, "GPT-2 scores 0.140 here.\n\nOn 2026-12-02 it scored 0.269.\n\n"
                    "Measured at `1cf0c32`: 0.51.\n\n```\nclapcap x --lr 0.001\n```\n\nA 2.5 % rise 0.3 once at `lr 0.001`.\n")
    problems = doc_numbers.process(tmp_path, write=False)
    assert [(p.line, p.message.split(" ")[0]) for p in problems] == [(1, "0.140")]
    _tree_other = tmp_path / "docs" / "other.md"
    _tree_other.write_text("Not strict: 0.140.\n")
    assert len(doc_numbers.process(tmp_path, write=False)) == 1


def test_the_repository_docs_pass():
    assert [str(p) for p in doc_numbers.process(doc_numbers.ROOT, write=False)] == []
