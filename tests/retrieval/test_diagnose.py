"""``clapcap retrieval diagnose``: my numbers beside the published ones, and the causes read from the meta."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clapcap.cli import main
from clapcap.data.dump import EmbeddingDump, save_dump
from clapcap.errors import InputError
from clapcap.retrieval.diagnose import diagnose, load_known
from clapcap.retrieval.metrics import evaluate_dump


def _dump(tmp_path, *, n: int = 12, cpc: int = 1, truncation: str = "rand_trunc", dataset: str = "data/audiocaps",
          checkpoint: str = "laion/clap-htsat-fused", tokenizer: str = "RobertaTokenizerFast (roberta-base ids)"):
    rng = np.random.default_rng(0)
    audio = rng.normal(size=(n, 8)).astype(np.float32)
    idx = np.repeat(np.arange(n), cpc)
    text = (audio[idx] + rng.normal(scale=0.8, size=(n * cpc, 8))).astype(np.float32)
    meta = {"pipeline": "hf_transformers", "checkpoint": checkpoint, "checkpoint_kind": "hub",
            "checkpoint_revision": "8fa0f1c6d0433df6e97c127f64b2a1d6c0dcda8a", "tokenizer": tokenizer,
            "dataset": dataset, "split": "test",
            "preprocessing": {"sample_rate": 48000, "truncation": truncation, "window_samples": 480000,
                              "crop": "head"}}
    dump = EmbeddingDump(audio, text, idx, [f"c{i}" for i in range(n)], [f"t{j}" for j in range(n * cpc)], meta)
    path = tmp_path / "dump.npz"
    save_dump(dump, path)
    return path, dump


def test_the_packaged_table_holds_the_reference_cells():
    known = load_known()
    ref = {(e["checkpoint"], e["dataset"]): e for e in known if e["origin"] == "reference_parity_report"}
    assert set(ref) == {(c, d) for c in ("laion/clap-htsat-fused", "laion/clap-htsat-unfused")
                        for d in ("audiocaps", "clotho")}
    assert ref[("laion/clap-htsat-fused", "audiocaps")]["n_clips"] == 957
    assert ref[("laion/clap-htsat-unfused", "clotho")]["captions_per_clip"] == 5
    assert abs(ref[("laion/clap-htsat-fused", "audiocaps")]["metrics"]["t2a"]["r@1"] - 0.23197492163009403) < 1e-15


def test_a_planted_mismatch_is_named_from_the_meta(tmp_path):
    """A fused checkpoint embedded with rand_trunc on a 12-clip test set, beside the reference's
    fused AudioCaps cell: exactly truncation and test-set size differ."""
    path, _ = _dump(tmp_path)
    report = diagnose(path)
    first = report["comparisons"][0]
    assert first["known"] == "reference parity report: laion/clap-htsat-fused on audiocaps"
    assert first["differing"] == ["truncation", "test_set_size"]
    causes = {c["name"]: c for c in first["causes"]}
    assert causes["truncation"]["mine"] == "rand_trunc" and causes["truncation"]["known"] == "fusion"
    assert causes["test_set_size"]["mine"] == 12 and causes["test_set_size"]["known"] == 957
    assert causes["checkpoint"]["differs"] is False and causes["checkpoint"]["mine"].endswith("@ 8fa0f1c6d043")


def test_stand_in_tokenizer_and_captions_per_clip_are_named(tmp_path):
    path, _ = _dump(tmp_path, cpc=5, dataset="data/clotho", truncation="fusion",
                    tokenizer="RobertaTokenizerFast (clapcap offline stand-in: GPT-2 ids + 4)")
    first = diagnose(path, dataset="audiocaps")["comparisons"][0]
    assert {"captions_per_clip", "tokenizer"} <= set(first["differing"])
    assert diagnose(path)["dataset"] == "clotho"


def test_a_matching_known_result_gives_zero_deltas_and_no_cause(tmp_path):
    path, dump = _dump(tmp_path)
    mine = evaluate_dump(dump)
    known = {"entries": [{"name": "mine", "origin": "test", "checkpoint": "laion/clap-htsat-fused",
                          "dataset": "audiocaps", "n_clips": 12, "captions_per_clip": 1, "multi_positive": False,
                          "truncation": "rand_trunc", "sample_rate": 48000, "map_at_10": "trec",
                          "metrics": {d: {m: mine[d][m] for m in ("r@1", "r@10", "map@10")} for d in ("t2a", "a2t")}}]}
    (tmp_path / "known.json").write_text(json.dumps(known))
    first = diagnose(path, known_path=tmp_path / "known.json")["comparisons"][0]
    assert first["differing"] == [] and all(r["delta"] == 0.0 for r in first["rows"]) and len(first["rows"]) == 6


def test_cli_prints_the_table_and_the_causes(tmp_path, capsys):
    path, _ = _dump(tmp_path)
    assert main(["retrieval", "diagnose", str(path), "--out", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    assert "causes that differ: truncation, test_set_size" in out and "t2a       r@1" in out
    assert json.loads((tmp_path / "d.json").read_text())["dataset"] == "audiocaps"


def test_a_dataset_the_meta_does_not_name_is_asked_for(tmp_path, capsys):
    path, _ = _dump(tmp_path, dataset="data/corpus")
    with pytest.raises(InputError, match="pass --dataset audiocaps or clotho"):
        diagnose(path)
    assert main(["retrieval", "diagnose", str(path)]) == 2
    assert capsys.readouterr().err.startswith("clapcap: error: cannot tell the dataset")
