"""``clapcap pipeline``: the DVC pipeline, with independent stages side by side."""

from __future__ import annotations

import argparse
import os
from typing import Any

from clapcap.cli._common import add_command, add_group


def _repro(args: argparse.Namespace) -> int:
    from clapcap.repro import apply_study, repro

    if args.study:
        for override in apply_study(args.root, args.study, say=print):
            print(f"params.yaml: {override}")
    result = repro(args.root, jobs=args.jobs, times_path=args.times or None)
    return 0 if result.ok else 1


def _study(args: argparse.Namespace) -> int:
    from clapcap.repro import apply_study, study_overrides

    if args.print_overrides:
        print(" ".join(f"-S \"{o}\"" for o in study_overrides(args.root, args.name)))
        return 0
    for override in apply_study(args.root, args.name, say=print):
        print(f"params.yaml: {override}")
    return 0


def _use_clap(args: argparse.Namespace) -> int:
    from clapcap.clap_choice import use_clap

    for key, value in use_clap(args.root, args.checkpoint, revision=args.revision).items():
        print(f"params.yaml: {key}={value}")
    print("then `make repro` (with HF_HUB_OFFLINE=0 to download a hub id that is not cached)")
    return 0


def _refactor_commit(args: argparse.Namespace) -> int:
    from clapcap.refactor import refactor_commit

    result = refactor_commit(args.root, canary=args.canary or None, dry_run=args.dry_run,
                             rerun_params=args.rerun_params)
    return 0 if result.ok else 1


def register(subparsers: Any, name: str, help_text: str) -> None:
    """Register the ``pipeline`` group and its commands."""
    group = add_group(subparsers, name, help_text)
    p = add_command(group, "repro", _repro,
                    "bring every DVC stage up to date like `dvc repro`, running up to --jobs independent "
                    "stages at once (each through `dvc repro --single-item`)")
    p.add_argument("--jobs", "-j", type=int, default=min(2, os.cpu_count() or 1),
                   help="stages at once (default: 2, or 1 on a 1-core machine); 1 runs plain `dvc repro`")
    p.add_argument("--root", default=".", help="the DVC project (default: the current folder)")
    p.add_argument("--study", default="",
                   help="first write studies/<STUDY>.yaml's values into params.yaml (e.g. full: the whole grid)")
    p.add_argument("--times", default="reports/build_times.json",
                   help="where to write the per-stage seconds of the build, also read to start the longest "
                        "chains first ('' to skip)")
    p = add_command(group, "study", _study,
                    "write a study's grid (studies/NAME.yaml: full, reduced) into params.yaml, as `dvc exp run -S` "
                    "would; --print-overrides prints the -S arguments for `dvc exp run` instead")
    p.add_argument("name", help="the study: a file studies/NAME.yaml")
    p.add_argument("--root", default=".", help="the DVC project (default: the current folder)")
    p.add_argument("--print-overrides", action="store_true",
                   help="print `-S key=value` arguments for `dvc exp run` and change nothing")
    p = add_command(group, "use-clap", _use_clap,
                    "make CHECKPOINT (an HF ClapModel: hub id or save_pretrained folder) the CLAP of every stage "
                    "that embeds with it, fine-tunes it (RobustCLAP) or captions from its embeddings")
    p.add_argument("checkpoint", help="hub id (laion/clap-htsat-unfused), a folder, or models/synth_clap/model "
                   "to restore the project's own CLAP")
    p.add_argument("--revision", default="", help="hub ids: branch, tag or commit (default: main)")
    p.add_argument("--root", default=".", help="the DVC project (default: the current folder)")
    p = add_command(group, "refactor-commit", _refactor_commit,
                    "after a change that should alter no result (a refactor): rerun a cheap canary set of the "
                    "stages whose code changed, check their outputs hash as dvc.lock says, then record the "
                    "other stages' new code with `dvc commit` instead of rerunning them (docs/architecture.md)")
    p.add_argument("--canary", nargs="+", metavar="STAGE", default=[],
                   help="rerun these stages instead of the chosen cover (each must be a changed stage)")
    p.add_argument("--dry-run", action="store_true", help="print the changed stages and the canary, run nothing")
    p.add_argument("--rerun-params", action="store_true",
                   help="admit stages whose params.yaml entries changed (keys moved, values kept): each reruns "
                        "as a canary and must reproduce its outputs")
    p.add_argument("--root", default=".", help="the DVC project")
