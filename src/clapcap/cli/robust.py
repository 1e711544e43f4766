"""`clapcap robust ...`: paraphrase views, RobustCLAP fine-tuning and the robustness benchmark."""

from __future__ import annotations

import argparse
import sys

from clapcap.cli._common import add_command, add_group, compute_of


def _paraphrase(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.llm import LLMError
    from clapcap.paraphrase.dataset import ParaphraseParams
    from clapcap.tracked.paraphrase import run_paraphrase

    params = load_section(ParaphraseParams, "robust_paraphrase", args.params)
    if args.backend:
        params.backend = args.backend
    if args.max_clips is not None:
        params.max_clips = args.max_clips
    try:
        report = run_paraphrase(params)
    except LLMError as err:  # finished calls are cached: a rerun resumes
        print(f"clapcap: error: {err}", file=sys.stderr)
        return 1
    print(f"{report['n_captions']} captions, views {report['n_views']}, "
          f"{report.get('n_failed_views', 0)} failed -> {params.out_dir}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.robust.config import RobustTrainParams
    from clapcap.tracked.robust import run_robust_train

    result = run_robust_train(load_section(RobustTrainParams, "robust_train", args.params), compute=compute_of(args))
    print(result.model_dir)
    return 0


def _benchmark(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.experiments.robust.config import RobustBenchParams
    from clapcap.tracked.robust import run_robust_benchmark

    params = load_section(RobustBenchParams, "robust_benchmark", args.params)
    result = run_robust_benchmark(params, compute=compute_of(args))
    print(f"{params.out_dir}/benchmark.md; register: {result['register']['reason']}")
    return 0


def register(subparsers, name: str, help_text: str) -> None:
    """Add the ``robust`` group and its commands."""
    group = add_group(subparsers, name, help_text)
    commands = (("paraphrase", _paraphrase, "write view 1 / view 2 paraphrases (corpus views or an LLM)"),
                ("train", _train, "fine-tune a CLAP with the multi-view contrastive loss"),
                ("benchmark", _benchmark, "retrieval on original vs paraphrased queries + zero-shot check"))
    for cmd, fn, text in commands:
        p = add_command(group, cmd, fn, text)
        p.add_argument("--params", default="params.yaml", help="parameter file (default params.yaml)")
        if cmd == "paraphrase":
            p.add_argument("--backend", choices=["corpus", "llm"], help="override robust_paraphrase.backend")
            p.add_argument("--max-clips", type=int, default=None, help="only the first N clips (smoke runs)")
