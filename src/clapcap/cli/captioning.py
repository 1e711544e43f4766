"""``clapcap captioning``: ClipCap training, LR search, generation, ablations and reports.

Every handler parses the ``captioning`` section of ``--params`` (default ``params.yaml``)
where needed, calls one library function and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
from typing import Any

from clapcap.cli._common import add_command, add_group, compute_of

logger = logging.getLogger(__name__)


def _params(args: argparse.Namespace) -> Any:
    from clapcap.config import load_section
    from clapcap.experiments.captioning.config import CaptioningParams

    params = load_section(CaptioningParams, "captioning", args.params)
    if getattr(args, "no_track", False):
        params.track = False
    return params


def _train(args: argparse.Namespace) -> int:
    from clapcap.experiments.captioning.study import run_ablation
    from clapcap.tracked.captioning import study_tracker

    params = _params(args)
    records = run_ablation(params, "lm", lm=args.lm, seed=args.seed, compute=compute_of(args),
                           tracker=study_tracker(params))
    for rec in records:
        logger.info("%s: test %s", rec["spec"]["name"], rec["test"]["corpus"])
    return 0


def _lr_search(args: argparse.Namespace) -> int:
    from clapcap.experiments.captioning.study import run_lr_search
    from clapcap.tracked.captioning import study_tracker

    params = _params(args)
    best = run_lr_search(params, args.lm, compute=compute_of(args), tracker=study_tracker(params))
    logger.info("chosen LRs: stage 1 %.2e, stage 2 projection %.2e LM %.2e (plot %s)",
                best["stage1_lr_projection"], best["stage2_lr_projection"], best["stage2_lr_lm"], best["plot"])
    return 0


def _generate(args: argparse.Namespace) -> int:
    from clapcap.captioning.config import DecodingConfig
    from clapcap.captioning.evaluate import caption_dump
    from clapcap.utils.io import write_json

    decoding = DecodingConfig(strategy=args.strategy, num_beams=args.num_beams, length_penalty=args.length_penalty,
                              repetition_penalty=args.repetition_penalty,
                              no_repeat_ngram_size=args.no_repeat_ngram_size, top_p=args.top_p,
                              max_new_tokens=args.max_new_tokens, trim_sentences=args.trim_sentences,
                              trim_words=args.trim_words, seed=args.seed)
    preds = caption_dump(args.checkpoint, args.dump, decoding, embedding_key=args.embedding_key,
                         compute=compute_of(args))
    write_json(args.out, preds)
    logger.info("wrote %d captions to %s", len(preds), args.out)
    return 0


def _caption(args: argparse.Namespace) -> int:
    from clapcap import tracking
    from clapcap.experiments.captioning.registry import BUILD_HINT
    from clapcap.utils.io import write_json

    paths = [str(p) for p in args.audio]
    model = tracking.load_pyfunc_model(args.model, build_hint=BUILD_HINT)  # a clear error on a fresh clone
    out = dict(zip(paths, model.predict(paths), strict=True))
    if args.out:
        write_json(args.out, out)
        logger.info("wrote %d captions to %s", len(out), args.out)
    for path, caption in out.items():
        print(f"{path}\t{caption}")
    return 0


def _ablate(args: argparse.Namespace) -> int:
    from clapcap.experiments.captioning.study import run_ablation
    from clapcap.tracked.captioning import study_tracker

    params = _params(args)
    records = run_ablation(params, args.kind, lm=args.lm, name=args.name, seed=args.seed,
                           compute=compute_of(args), tracker=study_tracker(params))
    logger.info("%d %s configuration(s) done", len(records), args.kind)
    return 0


def _noise_floor(args: argparse.Namespace) -> int:
    from clapcap.experiments.captioning.study import noise_floor
    from clapcap.tracked.captioning import study_tracker

    params, compute = _params(args), compute_of(args)
    for lm in [args.lm] if args.lm else params.lms:
        floor = noise_floor(params, lm, compute=compute, tracker=study_tracker(params))
        logger.info("%s noise floor: %s", lm, {m: (round(v["mean"], 4), round(v["std"], 4))
                                               for m, v in floor["metrics"].items()})
    return 0


def _baseline(args: argparse.Namespace) -> int:
    from clapcap.experiments.captioning.study import evaluate_baseline

    rec = evaluate_baseline(_params(args))
    logger.info("trivial baseline %r: test %s", rec["caption"], rec["test"]["corpus"])
    return 0


def _summary(args: argparse.Namespace) -> int:
    from clapcap.reporting.captioning_tables import write_summary

    params = _params(args)
    paths = write_summary(params.out_dir, args.report_dir, decoding_seed=params.noise_seeds[0])
    logger.info("summary written: %s", ", ".join(str(p) for p in paths.values()))
    return 0


def _register(args: argparse.Namespace) -> int:
    from clapcap.tracked.captioning_register import register_champion

    result = register_champion(_params(args))
    logger.info("champion %s -> %s@%s v%d", result["name"], result["registered_model"], result["alias"],
                result["version"])
    return 0


def _findings(args: argparse.Namespace) -> int:
    from clapcap.experiments.captioning.findings import run_findings

    params = _params(args)
    found = run_findings(params)
    counts = {v: sum(f["verdict"] == v for f in found) for v in ("holds", "within noise", "reversed")}
    logger.info("%d findings %s -> %s", len(found), counts, params.findings.conclusions)
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from clapcap.flows.captioning import run_sweep

    result = run_sweep(_params(args), concurrency=args.concurrency, retries=args.retries,
                       register_best=not args.no_register)
    logger.info("sweep done: %d runs (%d skipped), summary %s", len(result["runs"]), len(result["skipped"]),
                result["summary"])
    return 0


def _add_params(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", default="params.yaml", help="parameter file (section captioning)")
    p.add_argument("--no-track", action="store_true", help="do not log MLflow runs")


def _add_generate(group: Any) -> None:
    p = add_command(group, "generate", _generate, "caption every clip of an embedding dump")
    p.add_argument("--checkpoint", required=True, help="saved captioner folder")
    p.add_argument("--dump", required=True, help="embedding dump (.npz)")
    p.add_argument("--out", required=True, help="predictions JSON {clip_id: caption}")
    p.add_argument("--embedding-key", default="audio_embeds",
                   help="dump array to caption from (audio_embeds, or an extra such as audio_frames)")
    p.add_argument("--strategy", choices=["greedy", "beam", "sample"], default="greedy", help="decoding strategy")
    p.add_argument("--num-beams", type=int, default=4, help="beam: beams kept")
    p.add_argument("--length-penalty", type=float, default=1.0, help="beam: exponent of the length normalisation")
    p.add_argument("--repetition-penalty", type=float, default=1.0, help="1.0 disables it")
    p.add_argument("--no-repeat-ngram-size", type=int, default=0, help="no n-gram of this size twice (0: off)")
    p.add_argument("--top-p", type=float, default=0.9, help="sample: nucleus probability mass, in (0, 1]")
    p.add_argument("--max-new-tokens", type=int, default=40, help="longest caption, in LM tokens")
    p.add_argument("--trim-sentences", action="store_true", help="cut each caption after its last complete sentence")
    p.add_argument("--trim-words", type=int, default=None, help="keep the first N words of each caption (default: all)")
    p.add_argument("--seed", type=int, default=0, help="sample: the sampling seed")


def register(subparsers: Any, name: str, help_text: str) -> None:
    """Add the ``captioning`` group and its commands."""
    group = add_group(subparsers, name, help_text)
    p = add_command(group, "train", _train, "train and evaluate an LM's baseline config (per seed)")
    _add_params(p)
    p.add_argument("--lm", required=True, help="language model to train, one of captioning.lms (gpt2, t5)")
    p.add_argument("--seed", type=int, default=None, help="one noise-floor seed (default: all)")
    p = add_command(group, "lr-search", _lr_search, "Optuna LR search (stage 1 sweep, stage 2 grid)")
    _add_params(p)
    p.add_argument("--lm", required=True, help="language model whose LRs to search, one of captioning.lms")
    _add_generate(group)
    p = add_command(group, "caption", _caption, "caption audio files with a registered captioner")
    p.add_argument("audio", nargs="+", help="audio files (wav, flac, ogg, mp3)")
    p.add_argument("--model", default="models:/clapcap-captioner@champion", help="MLflow model URI")
    p.add_argument("--out", default=None, help="also write {path: caption} JSON here")
    p = add_command(group, "ablate", _ablate, "run one ablation (or one configuration of it)")
    _add_params(p)
    p.add_argument("--kind", required=True, choices=["lm", "arch", "encoder", "music", "decoding"],
                   help="which ablation")
    p.add_argument("--lm", default=None, help="one language model (default: every LM of captioning.lms, "
                   "captioning.encoder_lm for encoder)")
    p.add_argument("--name", default=None, help="arch (prefix_length4), encoder or decoding config name")
    p.add_argument("--seed", type=int, default=None, help="one noise seed (default: all)")
    p = add_command(group, "noise-floor", _noise_floor, "mean/std of every metric over the noise seeds")
    _add_params(p)
    p.add_argument("--lm", default=None, help="one language model (default: every LM of captioning.lms)")
    for cmd, handler, text in (("baseline", _baseline, "score the most-common-training-caption baseline"),
                               ("register", _register, "register the best validation config as champion"),
                               ("findings", _findings, "test every stated captioning finding over training "
                                                       "seeds and test clips (docs/conclusions.md)")):
        _add_params(add_command(group, cmd, handler, text))
    p = add_command(group, "summary", _summary, "summary tables (Markdown, LaTeX) vs baseline and noise floor")
    _add_params(p)
    p.add_argument("--report-dir", default=None, help="where to write the tables (default: captioning.out_dir)")
    p = add_command(group, "sweep", _sweep, "run the whole study as a Prefect flow")
    _add_params(p)
    p.add_argument("--concurrency", type=int, default=1, help="tasks at a time (one per GPU)")
    p.add_argument("--retries", type=int, default=1, help="Prefect retries of a failed task")
    p.add_argument("--no-register", action="store_true", help="do not register the best config as champion")
    if importlib.util.find_spec("clapcap.cli.captioning_score") is not None:
        importlib.import_module("clapcap.cli.captioning_score").register_commands(group)
