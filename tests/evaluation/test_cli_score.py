"""`clapcap captioning score` (via register_commands) and the `clapcap assets` group."""

from __future__ import annotations

import argparse

import pytest

from clapcap.cli._common import add_group
from clapcap.cli.captioning_score import register_commands
from clapcap.utils.io import read_json, write_json


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="clapcap")
    sub = parser.add_subparsers(dest="group")
    register_commands(add_group(sub, "captioning", "captioning"))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_score_command_writes_scores(tmp_path):
    write_json(tmp_path / "pred.json", {"a": "A dog barks. Then it", "b": "Rain falls on a roof."})
    write_json(tmp_path / "refs.json", {"a": ["A dog is barking."], "b": ["Rain on a roof.", "It rains."]})
    rc = _run(["captioning", "score", "--predictions", str(tmp_path / "pred.json"),
               "--references", str(tmp_path / "refs.json"), "--out", str(tmp_path / "s.json"),
               "--trim-sentences", "--metrics", "bleu_1", "cider_d", "fense"])
    assert rc == 0
    out = read_json(tmp_path / "s.json")
    assert set(out) >= {"corpus", "per_clip", "unavailable", "primary"}
    assert set(out["corpus"]) == {"bleu_1", "cider_d"}
    assert out["settings"]["trim_sentences"] is True and out["settings"]["tokenizer"] == "ptb"
    assert set(out["per_clip"]) == {"a", "b"}


def test_score_command_bad_input_names_ids(tmp_path):
    write_json(tmp_path / "pred.json", {"a": "x", "extra": "y"})
    write_json(tmp_path / "refs.json", {"a": ["x"], "b": ["y"]})
    with pytest.raises(ValueError) as err:
        _run(["captioning", "score", "--predictions", str(tmp_path / "pred.json"),
              "--references", str(tmp_path / "refs.json"), "--out", str(tmp_path / "s.json")])
    msg = str(err.value)
    assert "pred.json" in msg and "'b'" in msg and "'extra'" in msg
    assert not (tmp_path / "s.json").exists()


def test_assets_cli(tmp_path, monkeypatch):
    from clapcap.cli import main

    assert main(["assets", "setup-offline", "--cache", str(tmp_path)]) == 0
    assert (tmp_path / "aac-metrics" / "meteor" / "meteor-1.5.jar").is_file()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["assets", "download", "--cache", str(tmp_path)]) == 1
