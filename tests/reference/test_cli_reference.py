"""`clapcap reference` commands end to end on the tiny corpus (CIDEr-D only, one PTB launch)."""

from __future__ import annotations

from clapcap.cli import main
from clapcap.utils.io import read_json, write_json


def test_dump_import_score(tmp_path, tiny_corpus, capsys):
    split_dir = tmp_path / "split"
    assert main(["reference", "dump-split", "--dataset", str(tiny_corpus), "--out-dir", str(split_dir)]) == 0
    clips = read_json(split_dir / "split.json")["clips"]
    write_json(tmp_path / "ext.json", {c["clip_id"]: "a sound is heard. and" for c in clips})
    assert main(["reference", "import", "--predictions", str(tmp_path / "ext.json"), "--split-json",
                 str(split_dir / "split.json"), "--name", "ext", "--out-dir", str(tmp_path / "out")]) == 0
    pred = tmp_path / "out" / "ext" / "predictions.json"
    assert main(["reference", "score", "--predictions", str(pred), "--split", str(split_dir / "split.csv"),
                 "--name", "ext", "--held-out-name", "ext_clean", "--trim-sentences", "--trim-words", "50",
                 "--out", str(tmp_path / "scores.json"), "--metrics", "cider_d"]) == 0
    out = read_json(tmp_path / "scores.json")
    assert out["name"] == "ext" and out["leakage"]["verdict"] == "inconclusive"  # 8 clips
    n_held = out["leakage"]["held_out"]["n_clips"]
    assert (out["held_out_row"] is None) if n_held == 0 else (out["held_out_row"]["name"] == "ext_clean")
    assert out["reportable"]["name"] == "ext"  # not leaky: the full row is reported
    assert out["settings"]["trim_words"] == 50
    # A mismatch is a clean CLI error (exit 2) naming the ids.
    write_json(pred, {"nope": "x"})
    assert main(["reference", "score", "--predictions", str(pred), "--split", str(split_dir / "split.csv"),
                 "--name", "ext", "--out", str(tmp_path / "s2.json"), "--metrics", "cider_d"]) == 2
    assert "'nope'" in capsys.readouterr().err


def test_run_all_references_writes_summary(tmp_path, tiny_corpus):
    from clapcap.data.prepare import load_dataset
    from clapcap.reference.config import ReferenceParams, ReferenceSpec
    from clapcap.reference.generate import run_all_references

    ids = load_dataset(tiny_corpus).split("test")["clip_id"]
    write_json(tmp_path / "ext.json", {c: "a sound" for c in ids})
    params = ReferenceParams(dataset_dir=str(tiny_corpus), split_dir=str(tmp_path / "split"),
                             out_dir=str(tmp_path / "out"), metrics=["cider_d"],
                             references=[ReferenceSpec(name="ext", backend="import",
                                                       predictions_file=str(tmp_path / "ext.json"))])
    paths = run_all_references(params)
    summary = read_json(tmp_path / "out" / "summary.json")
    assert set(paths) == {"ext"} and summary["ext"]["primary"] == "cider_d"
    assert summary["ext"]["reportable"]["n_clips"] == len(ids)
