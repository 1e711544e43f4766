"""`clapcap retrieval ...`: retrieval metrics, the metric-parity gate, paired comparison,
MTEB export.

Embedding, checkpoint identity and CLAP training commands are added by
``clapcap.cli.retrieval_models`` when that module exists.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
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
    print(format_metrics(result))
    return 0


def format_metrics(result: dict) -> str:
    """Both directions side by side, each value with its bootstrap interval when there is one."""
    lines = [f"{result['n_clips']} clips, {result['n_captions']} captions"
             f"{' (multi-positive a2t)' if result.get('multi_positive') else ''}",
             f"{'metric':<12} {'t2a':>26} {'a2t':>26}"]
    for metric in (k for k in result["t2a"] if k != "ci"):
        cells = []
        for d in ("t2a", "a2t"):
            value, ci = result[d].get(metric), result[d].get("ci", {}).get(metric)
            band = f" [{ci['low']:.4f}, {ci['high']:.4f}]" if ci else ""
            cells.append(f"{value:.4f}{band}" if isinstance(value, float) else str(value))
        lines.append(f"{metric:<12} {cells[0]:>26} {cells[1]:>26}")
    if "ci" in result["t2a"]:
        lines.append("[low, high]: the bootstrap interval over queries (docs/retrieval_metrics.md)")
    return "\n".join(lines)


def _parity(args: argparse.Namespace) -> int:
    from clapcap.retrieval.parity import run_parity

    report = run_parity(args.dumps, args.out, tolerance=args.tolerance)
    verdict = "passed" if report["passed"] else "FAILED"
    print(f"metric parity {verdict}: {report['n_cells']} cell(s), worst abs delta "
          f"{report['worst_abs_delta']:.3g}, tolerance {report['tolerance']:g} -> {args.out}")
    for failure in report["failures"]:
        print(f"  {failure}", file=sys.stderr)
    return 0 if report["passed"] else 1


def _parity_report(args: argparse.Namespace) -> int:
    from clapcap.errors import ClapcapError
    from clapcap.retrieval.parity import run_parity_report

    report = run_parity_report(args.dumps, args.out, identity_path=args.identity, tolerance=args.tolerance,
                               gate_identity=args.gate_identity)
    if report["failures"]:
        raise ClapcapError(f"parity report: {len(report['failures'])} failure(s), first: {report['failures'][0]}; "
                           f"see {args.out}")
    print(f"parity report: metric parity passed on {report['metric_parity']['n_cells']} cell(s); identity: "
          f"{report['checkpoint_identity']['verdict']} -> {args.out}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from clapcap.encoders.convert import convert_laion_checkpoint

    print(convert_laion_checkpoint(args.checkpoint, args.out_dir, tokenizer=args.tokenizer, spec_size=args.spec_size))
    return 0


def _diagnose(args: argparse.Namespace) -> int:
    from clapcap.retrieval.diagnose import diagnose, format_report

    report = diagnose(args.dump, dataset=args.dataset, laion_compatible=args.laion_compatible,
                      known_path=args.known, out_path=args.out)
    print(format_report(report, top=args.top))
    return 0


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


def _export_mteb(args: argparse.Namespace) -> int:
    from clapcap.retrieval.mteb_export import export_dump

    written = export_dump(args.dump, args.out_dir, main_score=args.main_score, dataset=args.dataset,
                          split=args.split, max_block_bytes=args.max_block_mb * 2**20)
    for direction, path in written.items():
        print(f"{direction}: {path}")
    return 0


EXPORT_MTEB_EXAMPLES = """examples:
  clapcap retrieval export-mteb data/embeddings/synth_clap/corpus/test.npz --out-dir results/mteb
  clapcap retrieval export-mteb test.npz --out-dir out --main-score hit_rate_at_5 --dataset clotho

Writes <out-dir>/Clapcap<Dataset>T2ARetrieval.json and ...A2TRetrieval.json (MTEB TaskResult
JSON; ks 1, 3, 5, 10, 20, 100, 1000; pessimistic ties). See docs/retrieval_metrics.md."""


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

    p = add_command(group, "parity-report", _parity_report,
                    "the reference's parity report: metric parity per dump plus a checkpoint-identity finding")
    p.add_argument("dumps", nargs="+", help="embedding dumps (.npz), one cell each")
    p.add_argument("--identity", default=None,
                   help="identity report (identity_checkpoints.json or `retrieval identity` output); "
                        "default: none, recorded as not run")
    p.add_argument("--out", required=True, help="report JSON to write")
    p.add_argument("--tolerance", type=float, default=1e-9, help="largest allowed abs difference")
    p.add_argument("--gate-identity", action="store_true",
                   help="count an identity verdict other than 'same checkpoint' as a failure (exit 1)")

    p = add_command(group, "compare", _compare, "paired bootstrap test of two dumps of the same queries")
    p.add_argument("a", help="dump A (.npz)")
    p.add_argument("b", help="dump B (.npz), same clips and captions in the same order")
    p.add_argument("--out", required=True, help="comparison JSON to write")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--laion-compatible", action="store_true", help="LAION-CLAP a2t mAP@10 formula")

    p = add_command(group, "export-mteb", _export_mteb,
                    "t2a/a2t results of a dump as MTEB TaskResult JSON, one file per direction")
    p.epilog = EXPORT_MTEB_EXAMPLES
    p.add_argument("dump", help="embedding dump (.npz)")
    p.add_argument("--out-dir", required=True, help="folder of the two TaskResult files")
    p.add_argument("--main-score", default="ndcg_at_10",
                   help="MTEB key copied into main_score (MTEB's audio tasks use hit_rate_at_5)")
    p.add_argument("--dataset", default=None,
                   help="dataset part of the task names (default: the dump's meta dataset folder name)")
    p.add_argument("--split", default=None, help="split key of scores (default: the dump's meta split, else test)")
    p.add_argument("--max-block-mb", type=int, default=256, help="memory budget of a similarity block")

    p = add_command(group, "convert", _convert,
                    "convert a laion_clap .pt into a transformers ClapModel folder (the hf_clap backend, use-clap)")
    p.add_argument("checkpoint", help="laion_clap checkpoint (.pt), fused or not (read from its weights)")
    p.add_argument("out_dir", help="folder to write (model, tokenizer, preprocessor_config.json)")
    p.add_argument("--tokenizer", default="roberta-base",
                   help="RoBERTa tokenizer to copy in, hub id or folder (default: roberta-base)")
    p.add_argument("--spec-size", type=int, default=None,
                   help="HTSAT spec size when the weights do not tell it (default: inferred)")

    p = add_command(group, "diagnose", _diagnose,
                    "put a dump's metrics beside the published ones and name the causes of a mismatch")
    p.add_argument("dump", help="embedding dump (.npz) of AudioCaps or Clotho")
    p.add_argument("--dataset", default=None, choices=["audiocaps", "clotho"],
                   help="which benchmark (default: read from the dump's meta dataset path)")
    p.add_argument("--laion-compatible", action="store_true", help="LAION-CLAP a2t mAP@10 formula")
    p.add_argument("--known", default=None, help="a known-results JSON (default: clapcap's table)")
    p.add_argument("--top", type=int, default=1, help="how many known results to print (default 1)")
    p.add_argument("--out", default=None, help="also write the full report as JSON")

    # Embedding, identity and training commands live with the encoders (another module).
    if importlib.util.find_spec("clapcap.cli.retrieval_models") is not None:
        importlib.import_module("clapcap.cli.retrieval_models").register_commands(group)
