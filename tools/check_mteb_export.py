"""Load clapcap's MTEB exports with mteb's own TaskResult loader and check nothing is lost.

Usage (with a Python that has mteb installed; mteb is not a clapcap dependency)::

    /tmp/mteb_venv/bin/python tools/check_mteb_export.py results/mteb/*.json

For each file: ``mteb.results.TaskResult.from_disk(path)`` (the loader mteb's result cache
uses) and ``from_disk(path, load_historic_data=False)`` (strict pydantic validation); then
the loaded task name, revision and every score of every split and subset must equal the
file's, ``main_score`` must be a number and ``get_score()`` must return it. Prints one line
per file and exits 1 when any check fails (2 when mteb cannot be imported). Imports nothing
from clapcap, so it runs in a separate environment.

With ``--dump DUMP.npz`` (the dump the files were exported from) it also recomputes every
exported score with MTEB's own evaluator (``mteb._evaluators.retrieval_metrics``:
``calculate_retrieval_scores``, pytrec_eval, and ``make_score_dict`` for the names) on the
dump's similarities (float64 dot products of L2-normalised rows, rounded to float32, as
clapcap does) and requires agreement within 1e-5 (MTEB rounds to 5 decimals). Positives get
document ids ``a...`` and non-positives ``z...``: MTEB and trec_eval order tied scores by
id, descending, which is then clapcap's pessimistic rule, so ties agree too.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def check_file(path: Path) -> list[str]:
    """Problems of one exported file under mteb's loader (empty when it loads intact)."""
    from mteb.results import TaskResult

    raw = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    try:
        loaded = TaskResult.from_disk(path)
        strict = TaskResult.from_disk(path, load_historic_data=False)
    except (ValueError, KeyError, TypeError) as err:  # pydantic's ValidationError is a ValueError
        return [f"mteb's loader refused it: {type(err).__name__}: {err}"]
    for name, result in (("from_disk", loaded), ("from_disk(load_historic_data=False)", strict)):
        if result.task_name != raw["task_name"] or result.dataset_revision != raw["dataset_revision"]:
            problems.append(f"{name}: task_name/dataset_revision changed on load")
        for split, subsets in raw["scores"].items():
            got = {s["hf_subset"]: s for s in result.scores.get(split, [])}
            for subset in subsets:
                have = got.get(subset["hf_subset"])
                if have is None:
                    problems.append(f"{name}: split {split} subset {subset['hf_subset']} missing")
                    continue
                lost = [k for k, v in subset.items() if have.get(k) != v]
                if lost:
                    problems.append(f"{name}: {split}/{subset['hf_subset']}: changed keys {lost}")
    main_scores = [s["main_score"] for subsets in raw["scores"].values() for s in subsets]
    score = loaded.get_score()
    if not all(isinstance(v, (int, float)) for v in main_scores) \
            or not math.isclose(score, sum(main_scores) / len(main_scores), rel_tol=0, abs_tol=1e-15):
        problems.append(f"get_score() {score!r} is not the mean main_score {main_scores!r}")
    return problems


def _mteb_recomputed(dump: Path, direction: str, ks: list[int]) -> dict[str, float]:
    """MTEB's score dict for one direction of ``dump`` (see the module docstring)."""
    import numpy as np
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores, make_score_dict

    with np.load(dump, allow_pickle=False) as data:
        audio, text = (np.asarray(data[k], dtype=np.float64) for k in ("audio_embeds", "text_embeds"))
        idx = np.asarray(data["caption_clip_index"], dtype=np.int64)
    for x in (audio, text):
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        np.divide(x, norms, out=x, where=norms > 0)
    sim = (text @ audio.T).astype(np.float32)  # (n_captions, n_clips)
    scores, positive = (sim, idx[:, None] == np.arange(audio.shape[0])[None, :])
    if direction == "a2t":
        scores, positive = scores.T, positive.T
    qrels, run = {}, {}
    for q in range(scores.shape[0]):
        names = [f"a{c:07d}" if positive[q, c] else f"z{c:07d}" for c in range(scores.shape[1])]
        qrels[f"q{q:07d}"] = {n: 1 for n in names if n[0] == "a"}
        run[f"q{q:07d}"] = {n: float(v) for n, v in zip(names, scores[q], strict=True)}
    res = calculate_retrieval_scores(run, qrels, ks)
    return make_score_dict(ndcg=res.ndcg, _map=res.map, recall=res.recall, precision=res.precision,
                           mrr=res.mrr, naucs=res.naucs, naucs_mrr=res.naucs_mrr,
                           hit_rate=res.hit_rate, task_scores={})


def check_against_mteb(path: Path, dump: Path) -> list[str]:
    """Exported scores of ``path`` that MTEB's evaluator, run on ``dump``, does not reproduce."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    info = raw.get("clapcap", {})
    if info.get("direction") not in ("t2a", "a2t") or not info.get("ks"):
        return ["no clapcap direction/ks block: not a clapcap export"]
    theirs = _mteb_recomputed(dump, info["direction"], [int(k) for k in info["ks"]])
    problems = []
    for subsets in raw["scores"].values():
        for subset in subsets:
            for key, value in subset.items():
                if key in ("hf_subset", "languages", "main_score", "mteb_version"):
                    continue
                if key not in theirs or not abs(theirs[key] - value) <= 1e-5:
                    problems.append(f"{key}: exported {value!r}, MTEB's evaluator {theirs.get(key)!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="exported TaskResult JSON files")
    parser.add_argument("--dump", type=Path, default=None,
                        help="the dump the files came from: also recompute them with MTEB's evaluator")
    args = parser.parse_args(argv)
    try:
        from importlib.metadata import version

        import mteb  # noqa: F401
    except ImportError as err:
        print(f"mteb is not importable here ({err}); run with a Python that has mteb", file=sys.stderr)
        return 2
    print(f"mteb {version('mteb')}")
    failed = 0
    for path in args.files:
        problems = check_file(path)
        if args.dump is not None and not problems:
            problems = check_against_mteb(path, args.dump)
        failed += bool(problems)
        print(f"{path}: {'OK' if not problems else 'FAILED'}")
        for line in problems:
            print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
