"""What pretraining buys on real sounds: the project's from-scratch CLAP architecture (params.yaml
``train_clap``: tiny HTSAT audio tower from scratch, MiniLM text tower with its top 2 layers
tuned) trained on the real corpus's train split, against the tower CLAP (frozen pretrained
YAMNet + MiniLM, trained heads; ``results/real_clap/metrics.json``) and chance, on the same test
sets: the corpus's cross-source test and the 129 real recordings.

    .venv/bin/python benchmarks/real_scratch_clap.py [--model-dir /tmp/scratch_real] [--skip-train]

Trains once into ``--model-dir`` (``--skip-train`` reuses it; 15 epochs took about 20 min on 2
cores), embeds both test sets with the ``hf_clap`` backend and prints, per test set, t2a and
a2t R@10 with the bootstrap interval (clapcap's metrics, 2,000 resamples), as ratios to the tower
CLAP's and to chance. One training seed (the tower CLAP's numbers are means over 3 seeds).
A benchmark script, not a test: it prints what it measures, whatever the numbers are.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

TESTS = {"cross-source test": ("data/real_corpus", "test", None), "real benchmark": ("data/real", "test", "real_benchmark")}


def main() -> int:
    from clapcap.clap.config import TrainClapParams
    from clapcap.config import load_section
    from clapcap.data.dump import load_dump
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.embed import embed_dataset
    from clapcap.retrieval.bootstrap import bootstrap_ci
    from clapcap.retrieval.metrics import aggregate, per_query_dump
    from clapcap.tracked.clap import run_synth_clap

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", default="/tmp/scratch_real", help="where the from-scratch CLAP is trained")
    ap.add_argument("--skip-train", action="store_true", help="reuse the model in --model-dir")
    ap.add_argument("--tower-metrics", default="results/real_clap/metrics.json")
    args = ap.parse_args()
    params = load_section(TrainClapParams, "train_clap")
    params = dataclasses.replace(params, dataset_dir="data/real_corpus", out_dir=args.model_dir, track=False)
    if not args.skip_train:
        t0 = time.perf_counter()
        run_synth_clap(params)
        print(f"trained in {time.perf_counter() - t0:.0f} s")
    tower = json.loads(Path(args.tower_metrics).read_text())
    out = {}
    for label, (dataset, split, extra) in TESTS.items():
        dump_path = embed_dataset(EncoderConfig(name="scratch_real", backend="hf_clap",
                                                checkpoint=str(Path(args.model_dir) / "model")),
                                  dataset, split, Path(args.model_dir) / f"{split}_{Path(dataset).name}.npz")
        pq = per_query_dump(load_dump(dump_path), ks=(1, 5, 10))
        point, ci = aggregate(pq), bootstrap_ci({d: {"r@10": pq[d]["r@10"]} for d in pq}, seed=0)
        block = tower["extra_tests"][extra] if extra else tower
        cells = []
        for d in ("t2a", "a2t"):
            value, ref = point[d]["r@10"], block["test"]["tower_clap"][d]["r@10"]["value"]
            chance = block["test"]["chance"]["r@10"][d]
            cells.append(f"{d} R@10 {value:.3f} [{ci[d]['r@10']['low']:.3f}, {ci[d]['r@10']['high']:.3f}] = "
                         f"{value / ref:.2f}x the tower CLAP ({ref:.3f}), {value / chance:.1f}x chance ({chance:.3f})")
            out[f"{label} {d} r@10"] = {"scratch": value, "ci": ci[d]["r@10"], "tower_clap": ref, "chance": chance}
        print(f"{label}: " + "; ".join(cells))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
