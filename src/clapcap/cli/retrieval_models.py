"""`clapcap retrieval embed | identity | identity-check | train-clap`: encoder commands.

Registered into the ``retrieval`` group by :mod:`clapcap.cli.retrieval` via
:func:`register_commands`. Handlers import heavy libraries inside the function, call
one library function and return an exit code.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from clapcap.cli._common import add_command, compute_of


def _embed(args: argparse.Namespace) -> int:
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.embed import embed_dataset

    compute = compute_of(args)  # --device, else params.yaml's compute section; fails fast without CUDA
    # "random" is the only way to a random model: a left-out checkpoint is a usage error.
    checkpoint = "" if args.checkpoint == "random" else args.checkpoint
    cfg = EncoderConfig(name=args.name, backend=args.backend, checkpoint=checkpoint,
                        enable_fusion=args.enable_fusion, batch_size=args.batch_size, hf_home=args.hf_home,
                        revision=args.revision)
    if cfg.backend == "laion_clap" and cfg.hf_home:
        from clapcap.encoders.laion import prepare_laion_env

        prepare_laion_env(cfg.hf_home)
    out = embed_dataset(cfg, args.dataset, args.split, args.out, caption_column=args.caption_column,
                        max_clips=args.max_clips, save_frames=args.save_frames, compute=compute)
    print(out)
    return 0


def _identity(args: argparse.Namespace) -> int:
    from clapcap.retrieval.identity import identity_report

    report = identity_report(args.a, args.b, args.out, cos_threshold=args.cos_threshold,
                             pearson_threshold=args.pearson_threshold,
                             max_abs_diff_threshold=args.max_abs_diff_threshold)
    summary = {k: report[k] for k in ("verdict", "cross_pipeline_comparable", "similarity", "checks")}
    for key in ("audio_cosine", "text_cosine"):
        if key in report:
            summary[key] = {k: v for k, v in report[key].items() if k != "per_item"}
    print(json.dumps(summary, indent=2))
    return 0


def _identity_check(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.encoders.config import IdentityParams

    params = load_section(IdentityParams, "checkpoint_identity", args.params)
    if params.hf_home:  # before transformers is imported by anything below
        from clapcap.encoders.laion import prepare_laion_env

        prepare_laion_env(params.hf_home)
    from clapcap.encoders import crosscheck

    reports = crosscheck.run_checkpoint_identity(params, compute=compute_of(args))
    print(json.dumps({k: r["verdict"] for k, r in reports.items()}, indent=2))
    crosscheck.check_identity_reports(reports, params)  # a failed expectation: one error line, exit 1
    return 0


def _train_clap(args: argparse.Namespace) -> int:
    from clapcap.clap.config import TrainClapParams
    from clapcap.config import load_section
    from clapcap.tracked.clap import run_synth_clap

    params = load_section(TrainClapParams, "train_clap", args.params)
    if args.no_track:
        params.track = False
    res = run_synth_clap(params, compute=compute_of(args))
    print(json.dumps({"model_dir": res.model_dir, "val": res.val, "skipped": res.skipped}, indent=2))
    return 0


def register_commands(group: Any) -> None:
    """Add ``embed``, ``identity``, ``identity-check`` and ``train-clap`` to the retrieval group."""
    p = add_command(group, "embed", _embed, "embed a dataset split into an embedding dump (.npz)")
    p.add_argument("--dataset", required=True, help="prepared dataset folder (manifest.csv)")
    p.add_argument("--split", default="test", help="train, val, test or all")
    p.add_argument("--out", required=True, help="output .npz")
    p.add_argument("--backend", default="hf_clap", choices=["hf_clap", "laion_clap", "hf_frames", "tower_clap"],
                   help="encoder: a transformers CLAP, a laion_clap checkpoint, frame-level HF CLAP, or the "
                        "tower CLAP (YAMNet + MiniLM heads, models/real_clap/model)")
    p.add_argument("--checkpoint", required=True,
                   help="HF folder or hub id (hf_clap), laion .pt (laion_clap), tower CLAP folder (tower_clap), "
                        "or `random` for a random model "
                        "(a tiny one for hf_clap/hf_frames; smoke tests only)")
    p.add_argument("--revision", default="", help="hf_clap hub ids: branch, tag or commit (empty = main); "
                   "the commit is recorded in the dump's meta")
    p.add_argument("--name", default="cli", help="encoder label recorded in the dump and its reports")
    p.add_argument("--enable-fusion", action="store_true",
                   help="laion_clap: build the fusion model; hf_clap: must match the checkpoint")
    p.add_argument("--batch-size", type=int, default=16, help="clips or captions per forward pass")
    p.add_argument("--caption-column", default="captions",
                   choices=["captions", "paraphrases_v1", "paraphrases_v2"],
                   help="text side: the captions, or one paraphrase view of them")
    p.add_argument("--max-clips", type=int, default=None,
                   help="embed only the first N clips of the split (default: all)")
    p.add_argument("--save-frames", action="store_true", help="hf_frames: store frame-level outputs")
    p.add_argument("--hf-home", default="", help="laion_clap: offline HF cache folder (built if missing)")
    p.add_argument("--device", default="", help="auto, cpu, cuda or cuda:N (default: params.yaml's compute "
                   "section, else auto); CLAPCAP_DEVICE wins")

    p = add_command(group, "identity", _identity, "do two dumps of the same data come from one checkpoint?")
    p.add_argument("--a", required=True, help="dump A (.npz)")
    p.add_argument("--b", required=True, help="dump B (.npz)")
    p.add_argument("--out", required=True, help="identity report (.json)")
    p.add_argument("--cos-threshold", type=float, default=0.99,
                   help="'same checkpoint' needs every clip and caption cosine at least this, in (0, 1]")
    p.add_argument("--pearson-threshold", type=float, default=0.999,
                   help="... and the similarity matrices' Pearson correlation at least this, in (0, 1]")
    p.add_argument("--max-abs-diff-threshold", type=float, default=1e-3,
                   help="... and their largest absolute difference at most this")

    p = add_command(group, "identity-check", _identity_check,
                    "laion_clap vs converted HF self-test, and your checkpoints (params.yaml checkpoint_identity)")
    p.add_argument("--params", default="params.yaml", help="parameter file with a checkpoint_identity section")

    p = add_command(group, "train-clap", _train_clap, "train the synthetic CLAP (params.yaml train_clap)")
    p.add_argument("--params", default="params.yaml", help="parameter file with a train_clap section")
    p.add_argument("--no-track", action="store_true", help="skip MLflow logging and registration")
