"""Leakage check: a planted leak is caught, a clean model is not flagged, few clips is inconclusive.

Per-clip scores are CIDEr-D (pure Python, no tokenizer launch), so these run in CI on CPU.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from clapcap.evaluation.leakage import LeakageParams, decide_leakage, permutation_test
from clapcap.evaluation.shared_split import score_reference
from clapcap.utils.io import write_json

NOUNS = ["dog", "cat", "bird", "car", "train", "piano", "guitar", "drum", "violin", "rain",
         "wind", "water", "crowd", "engine", "bell", "horn", "siren", "baby", "man", "woman"]
VERBS = ["barks", "meows", "sings", "passes", "rumbles", "plays", "strums", "beats", "hums", "falls",
         "blows", "flows", "cheers", "roars", "rings", "honks", "wails", "cries", "talks", "laughs"]
PLACES = ["in a park", "on a street", "in a hall", "near a river", "in a room", "at night",
          "in the distance", "outdoors", "in a studio", "on a farm"]


def _refs(rng: np.random.Generator) -> list[str]:
    n, v = rng.integers(len(NOUNS), size=2)
    return [f"a {NOUNS[n]} {VERBS[v]} {PLACES[p]} while a {NOUNS[(n + k) % 20]} {VERBS[(v + k) % 20]}"
            for k, p in zip((1, 2, 3), rng.integers(len(PLACES), size=3), strict=True)]


def _noisy(refs: list[str], rng: np.random.Generator) -> str:
    """A plausible but imperfect caption: half the words of one reference, the rest random."""
    words = refs[0].split()
    keep = rng.random(len(words)) < 0.5
    return " ".join(w if k else str(rng.choice(NOUNS)) for w, k in zip(words, keep, strict=True))


def _write_case(tmp_path, n_per_group: int, leak: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows, preds = [], {}
    for i in range(2 * n_per_group):
        cid, flag = f"clip{i:03d}", i % 2 == 1  # even ids: is_audioset_eval False (possibly seen)
        refs = _refs(rng)
        rows += [{"clip_id": cid, "caption": r, "is_audioset_eval": str(flag)} for r in refs]
        preds[cid] = refs[1] if (leak and not flag) else _noisy(refs, rng)
    split = tmp_path / "split.csv"
    pd.DataFrame(rows).to_csv(split, index=False)
    write_json(tmp_path / "pred.json", preds)
    return tmp_path / "pred.json", split


def _score(pred, split, name="model", **kw):
    return score_reference(pred, split, name, metrics=["cider_d"], tokenize=False, env=None, **kw)


def test_planted_leak_is_caught(tmp_path):
    pred, split = _write_case(tmp_path, 30, leak=True)
    out = _score(pred, split, held_out_name="model_clean", out_path=tmp_path / "out.json")
    leak = out["leakage"]
    assert leak["verdict"] == "leaky" and leak["source"] == "permutation test"
    assert leak["p_value"] < 0.01 and leak["metric"] == "cider_d"
    assert leak["seen"]["n_clips"] == 30 and leak["held_out"]["n_clips"] == 30
    assert leak["seen"]["mean"] > leak["held_out"]["mean"]
    row = out["held_out_row"]
    assert row["name"] == "model_clean" and row["n_clips"] == 30
    assert out["reportable"]["name"] == "model_clean"
    assert (tmp_path / "out.json").is_file()


def test_clean_model_is_not_flagged(tmp_path):
    pred, split = _write_case(tmp_path, 30, leak=False)
    out = _score(pred, split)
    assert out["leakage"]["verdict"] == "clean"
    assert out["held_out_row"] is None and out["reportable"]["subset"] == "all"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clean_model_not_flagged_across_seeds(tmp_path, seed):
    pred, split = _write_case(tmp_path, 25, leak=False, seed=seed)
    assert _score(pred, split)["leakage"]["verdict"] == "clean"


def test_too_few_clips_is_inconclusive(tmp_path):
    pred, split = _write_case(tmp_path, 4, leak=True)
    out = _score(pred, split)
    assert out["leakage"]["verdict"] == "inconclusive"
    assert out["leakage"]["seen"]["n_clips"] == 4


def test_registry_overrides_and_keeps_empirical(tmp_path):
    pred, split = _write_case(tmp_path, 30, leak=False)
    out = _score(pred, split, name="lp_music_caps_transfer",
                 held_out_name="lp_music_caps_transfer_clean")
    leak = out["leakage"]
    assert leak["verdict"] == "leaky" and leak["source"].startswith("registry")
    assert leak["empirical_verdict"] == "clean"
    assert out["reportable"]["name"] == "lp_music_caps_transfer_clean"


def test_unflagged_clips_are_in_neither_group():
    scores = {"a": 1.0, "b": 0.5, "c": 0.2}
    flags = {"a": False, "b": True, "c": None}
    out = decide_leakage(scores, flags, params=LeakageParams(min_clips=1, n_permutations=100))
    assert out["seen"]["clip_ids"] == ["a"] and out["held_out"]["clip_ids"] == ["b"]


def test_permutation_p_value_matches_exact_enumeration():
    seen, held = np.array([3.0, 4.0, 2.5]), np.array([1.0, 2.0, 0.0, 2.6])
    pooled, obs = np.concatenate([seen, held]), seen.mean() - held.mean()
    diffs = []
    for idx in itertools.combinations(range(pooled.size), seen.size):
        mask = np.zeros(pooled.size, bool)
        mask[list(idx)] = True
        diffs.append(pooled[mask].mean() - pooled[~mask].mean())
    exact = np.mean(np.array(diffs) >= obs - 1e-12)
    assert permutation_test(seen, held, n_permutations=40000, seed=3) == pytest.approx(exact, abs=0.01)
    with pytest.raises(ValueError, match="non-empty"):
        permutation_test(seen, np.array([]))


def test_split_file_errors_name_row(tmp_path):
    bad = tmp_path / "split.csv"
    pd.DataFrame([{"clip_id": "a", "caption": "x", "is_audioset_eval": "True"},
                  {"clip_id": "a", "caption": "y", "is_audioset_eval": "False"}]).to_csv(bad, index=False)
    write_json(tmp_path / "p.json", {"a": "x"})
    with pytest.raises(ValueError, match=r"row 3: clip 'a' has is_audioset_eval=False"):
        _score(tmp_path / "p.json", bad)
    pd.DataFrame([{"clip_id": "a", "text": "x"}]).to_csv(bad, index=False)
    with pytest.raises(ValueError, match="missing column"):
        _score(tmp_path / "p.json", bad)


def test_predictions_mismatch_names_ids(tmp_path):
    pred, split = _write_case(tmp_path, 3, leak=False)
    write_json(pred, {"clip000": "a dog", "nope": "x"})
    with pytest.raises(ValueError) as err:
        _score(pred, split)
    assert "'clip001'" in str(err.value) and "'nope'" in str(err.value)
