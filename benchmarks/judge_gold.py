"""The pairwise study's LLM judges on gold items, against chance (0.5): can they be trusted?

Builds the gold items (:mod:`clapcap.pairwise.gold`) on ``--n-clips`` clips of a split CSV
(``clip_id``, ``caption``; several rows per clip are several references), serves the model
of params.yaml's ``pairwise.engine`` (llama.cpp, started here and stopped by PID), asks every
gold item in both orders with the first ``--raters`` raters of each pool of
``pairwise.judges``, and prints per judge its gold accuracy with a Wilson interval, the ratio
to chance, its order consistency and its first-shown rate. One run: a measurement, not a test.

    make engine
    python benchmarks/judge_gold.py --split data/real_corpus/manifest.csv --n-clips 40

A split that is a corpus manifest (``captions`` as a JSON list, or ``caption``) is read too.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd

from clapcap.experiments.pairwise.study import PairwiseStudyParams
from clapcap.flows.project import load_project_section
from clapcap.llm.engine import served
from clapcap.pairwise.gold import gold_accuracy, make_gold_items
from clapcap.pairwise.llm_judge import run_judges
from clapcap.pairwise.orders import order_report
from clapcap.pairwise.pairs import read_reference, write_pairs
from clapcap.pairwise.store import VoteStore


def _split_csv(path: Path, work: Path) -> Path:
    """``path`` as a split CSV (one row per reference caption); a manifest's JSON caption
    lists are expanded."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    if "captions" in df.columns:
        rows = [{"clip_id": r.clip_id, "caption": c} for r in df.itertuples() for c in json.loads(r.captions)]
        if "split" in df.columns:
            print(f"splits in {path.name}: {df['split'].value_counts().to_dict()}")
        out = work / "split.csv"
        pd.DataFrame(rows).to_csv(out, index=False)
        return out
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", type=Path, required=True, help="split CSV or corpus manifest")
    parser.add_argument("--split-name", default="", help="keep only rows of this split (manifest column 'split')")
    parser.add_argument("--n-clips", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--raters", type=int, default=1, help="raters per pool (they differ by name only)")
    parser.add_argument("--params", default="params.yaml")
    args = parser.parse_args()
    params = load_project_section(PairwiseStudyParams, "pairwise", args.params)
    with tempfile.TemporaryDirectory(prefix="judge_gold_") as tmp:
        work = Path(tmp)
        source = args.split
        if args.split_name:
            df = pd.read_csv(source, dtype=str, keep_default_na=False)
            source = work / "only.csv"
            df[df["split"] == args.split_name].to_csv(source, index=False)
        reference = read_reference(_split_csv(source, work))
        reference["audio_path"] = ""  # text judges: no audio needed
        gold = make_gold_items(reference, n_clips=args.n_clips, seed=args.seed)
        write_pairs(gold, work / "gold.csv")
        print(f"{len(gold)} gold items on {gold['clip_id'].nunique()} clips of {args.split} "
              f"({gold['gold_kind'].value_counts().to_dict()}); e.g.")
        for row in gold.head(2).itertuples():
            print(f"  true {row.caption_b!r} vs decoy {row.caption_a!r}")
        db = work / "votes.sqlite"
        start = time.monotonic()
        with served(replace(params.engine, log_path=str(work / "engine.log")), params.judges[0].base_url) as url:
            for judge in params.judges:
                cfg = replace(judge, models=judge.models[:args.raters], base_url=url,
                              both_orders=True) if params.engine.kind != "none" else judge
                print(f"{cfg.pool}: {run_judges(work / 'gold.csv', db, cfg)}")
        votes = VoteStore(db).votes()
        took = time.monotonic() - start
    accuracy, orders = gold_accuracy(votes, gold), order_report(votes)
    print(f"\n{len(votes)} answers in {took:.0f} s ({params.engine.alias}, {params.engine.n_threads} thread(s))")
    print(f"{'judge':<28} {'accuracy':>8} {'95% Wilson':>14} {'/chance':>8} {'passes':>6} "
          f"{'both right':>10} {'consistent':>10} {'1st shown':>9} {'answered':>9}  by kind")
    for judge, acc in accuracy.items():
        o = orders[judge]
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in acc["by_kind"].items())
        print(f"{judge:<28} {acc['accuracy']:>8.3f} [{acc['ci_low']:.3f}, {acc['ci_high']:.3f}] "
              f"{acc['accuracy'] / 0.5:>8.2f} {str(acc['passes']):>6} {acc['both_orders_correct']:>10.3f} "
              f"{o['consistency']:>10.3f} {o['first_shown_rate']:>9.3f} {acc['order_votes']:>4}/{2 * len(gold):<4}  {kinds}")


if __name__ == "__main__":
    main()
