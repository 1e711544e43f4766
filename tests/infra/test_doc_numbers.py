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


def test_a_list_element_is_picked_by_its_id_not_its_place(tmp_path):
    doc = _tree(tmp_path, "effect +0.12<!-- build:metrics/f.json#/findings/[id=b.two]/effect -->\n\n"
                          "none 0.1<!-- build:metrics/f.json#/findings/[id=c]/effect -->\n")
    (tmp_path / "metrics" / "f.json").write_text(json.dumps(
        {"findings": [{"id": "a.one", "effect": 0.5}, {"id": "b.two", "effect": 0.123}]}))
    messages = _messages(tmp_path)
    assert len(messages) == 1 and "0 elements with id 'c'" in messages[0]
    # A finding added in front of it (a rebuild's new finding) leaves the number where it was.
    (tmp_path / "metrics" / "f.json").write_text(json.dumps(
        {"findings": [{"id": "a.zero", "effect": 9.0}, {"id": "a.one", "effect": 0.5}, {"id": "b.two", "effect": 0.123}]}))
    doc_numbers.process(tmp_path, write=True)
    assert "+0.12<!-- build:metrics/f.json#/findings/[id=b.two]/effect -->" in doc.read_text()


def test_each_list_item_names_its_build_unless_its_lead_in_does(tmp_path):
    _tree(tmp_path, "Measured on 2026-12-05:\n- one 0.25\n- two 0.50\n\n"
                    "Measured somewhere:\n- three 0.75, on 2026-12-01\n- four 0.80\n  with a nested line 0.90\n\n"
                    "The build of 2026-12-04 had:\n\n- five 0.33\n")
    problems = doc_numbers.process(tmp_path, write=False)
    assert [(p.line, p.message.split(" ")[0]) for p in problems] == [(7, "0.80"), (8, "0.90")]
