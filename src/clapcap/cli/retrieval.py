"""`clapcap retrieval ...`: retrieval metrics, the metric-parity gate, paired comparison.

Embedding, checkpoint identity and CLAP training commands are added by
``clapcap.cli.retrieval_models`` when that module exists.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys

from clapcap.cli._common import add_command, add_group


def _evaluate(args: argparse.Namespace) -> int:
    from clapcap.retrieval.evaluate import evaluate_file, tracking_scope

    if args.mlflow:
        tracking_scope(args.dump)  # a dump MLflow cannot take fails before the metrics file is written
    result = evaluate_file(args.dump, args.out, laion_compatible=args.laion_compatible,
                           bootstrap=args.bootstrap, seed=args.seed,
                           max_block_bytes=args.max_block_mb * 2**20)
    if args.mlflow:
        from clapcap.tracked.retrieval import track_evaluation

        track_evaluation(result, args.dump, out_path=args.out,
                         params={"laion_compatible": args.laion_compatible, "bootstrap": args.bootstrap,
                                 "seed": args.seed})
    summary = {d: {k: v for k, v in result[d].items() if k != "ci"} for d in ("t2a", "a2t")}
    print(json.dumps(summary, indent=2))
    return 0


def _parity(args: argparse.Namespace) -> int:
    from clapcap.retrieval.parity import run_parity

    report = run_parity(args.dumps, args.out, tolerance=args.tolerance)
    verdict = "passed" if report["passed"] else "FAILED"
    print(f"metric parity {verdict}: {report['n_cells']} cell(s), worst abs delta "
          f"{report['worst_abs_delta']:.3g}, tolerance {report['tolerance']:g} -> {args.out}")
    for failure in report["failures"]:
        print(f"  {failure}", file=sys.stderr)
    return 0 if report["passed"] else 1


def _compare(args: argparse.Namespace) -> int:
    from clapcap.retrieval.evaluate import compare_files

    result = compare_files(args.a, args.b, args.out, n_resamples=args.bootstrap, seed=args.seed,
                           laion_compatible=args.laion_compatible)
    for direction in ("t2a", "a2t"):
        for metric, row in result[direction].items():
            print(f"{direction} {metric:12s} A {row['a']:.4f}  B {row['b']:.4f}  "
                  f"A-B {row['difference']:+.4f}  [{row['ci']['low']:+.4f}, {row['ci']['high']:+.4f}]"
                  f"  p={row['p_value']:.4f}")
    return 0


def register(subparsers, name: str, help_text: str) -> None:
    """Add the ``retrieval`` group and its commands to ``subparsers``."""
    group = add_group(subparsers, name, help_text)

    p = add_command(group, "evaluate", _evaluate, "t2a/a2t retrieval metrics of an embedding dump")
    p.add_argument("dump", help="embedding dump (.npz)")
    p.add_argument("--out", required=True, help="metrics JSON to write")
    p.add_argument("--laion-compatible", action="store_true",
                   help="a2t mAP@10 with LAION-CLAP's formula (reproduces published LAION numbers)")
    p.add_argument("--bootstrap", type=int, default=1000,
                   help="bootstrap resamples for 95%% intervals under 'ci' (0: none; default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--max-block-mb", type=int, default=256, help="memory budget of a similarity block")
    p.add_argument("--mlflow", action="store_true", help="also log the metrics to MLflow")

    p = add_command(group, "parity", _parity,
                    "metric-parity gate: harness vs independent implementation; exit 1 on failure")
    p.add_argument("dumps", nargs="+", help="embedding dumps (.npz)")
    p.add_argument("--out", required=True, help="parity report JSON to write")
    p.add_argument("--tolerance", type=float, default=1e-9, help="largest allowed abs difference")

    p = add_command(group, "compare", _compare, "paired bootstrap test of two dumps of the same queries")
    p.add_argument("a", help="dump A (.npz)")
    p.add_argument("b", help="dump B (.npz), same clips and captions in the same order")
    p.add_argument("--out", required=True, help="comparison JSON to write")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--laion-compatible", action="store_true", help="LAION-CLAP a2t mAP@10 formula")

    # Embedding, identity and training commands live with the encoders (another module).
    if importlib.util.find_spec("clapcap.cli.retrieval_models") is not None:
        importlib.import_module("clapcap.cli.retrieval_models").register_commands(group)
