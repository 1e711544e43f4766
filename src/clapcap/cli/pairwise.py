"""``clapcap pairwise``: make items, serve the rating page, run LLM judges, agreement."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from clapcap.cli._common import add_command, add_group

logger = logging.getLogger(__name__)


def _agreement(args: argparse.Namespace) -> int:
    from clapcap.pairwise.agreement import run_agreement

    run_agreement(args.ratings, args.out, human_pool=args.human_pool, confidence=args.confidence)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from clapcap.pairwise.server import serve

    serve(args.pairs, args.db, host=args.host, port=args.port, pool=args.pool, seed=args.seed,
          audio_root=args.audio_root)
    return 0


def _parse_prediction_args(values: list[str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for value in values:
        name, sep, path = value.partition("=")
        name, path = (name, path) if sep else (Path(value).stem, value)
        if name in out:
            raise ValueError(f"system {name!r} given twice in --predictions; use NAME=PATH")
        out[name] = Path(path)
    return out


def _make_pairs(args: argparse.Namespace) -> int:
    from clapcap.pairwise.pairs import build_pairs_file

    build_pairs_file(_parse_prediction_args(args.predictions), args.reference, args.out,
                     include_reference=not args.no_reference, n_clips=args.n_clips, seed=args.seed)
    return 0


def _judge(args: argparse.Namespace) -> int:
    from clapcap.pairwise.llm_judge import JudgeConfig, run_judges

    extra: dict[str, Any] = json.loads(args.extra_body) if args.extra_body else {}
    cfg = JudgeConfig(pool=args.pool, models=args.model, mode=args.mode, base_url=args.base_url,
                      api_key_env=args.api_key_env, env_file=args.env_file, seed=args.seed,
                      max_answer_attempts=args.max_answer_attempts, max_retries=args.max_retries,
                      timeout_s=args.timeout, max_connection_failures=args.max_connection_failures,
                      extra_body=extra, both_orders=not args.one_order)
    # An endpoint failure (a refused key, no connection, retries exhausted) or failed
    # judgements raise a user error: run_entry prints it as one line and exits 1. Votes
    # stored so far are kept, and a rerun resumes.
    run_judges(args.pairs, args.db, cfg, out=args.out, strict=True)
    return 0


def _export(args: argparse.Namespace) -> int:
    from clapcap.pairwise.store import VoteStore

    VoteStore(args.db).export_csv(args.out)
    return 0


def register(subparsers: Any, name: str, help_text: str) -> None:
    """Register the ``pairwise`` group and its commands."""
    group = add_group(subparsers, name, help_text)

    p = add_command(group, "agreement", _agreement, "win rates with CIs, Fleiss and Cohen kappa")
    p.add_argument("--ratings", required=True, help="ratings CSV (item_id,pair_id,rater,pool,choice)")
    p.add_argument("--out", required=True, help="output JSON")
    p.add_argument("--human-pool", default="human", help="pool whose consensus is the human one")
    p.add_argument("--confidence", type=float, default=0.95, help="Wilson interval confidence")

    p = add_command(group, "make-pairs", _make_pairs, "items from predictions JSONs and a split")
    p.add_argument("--predictions", nargs="+", required=True,
                   help="predictions JSON {clip_id: caption}, as PATH or NAME=PATH (two or more, "
                        "or one with the reference)")
    p.add_argument("--reference", required=True, help="split CSV: clip_id, caption[, audio_path]")
    p.add_argument("--out", required=True, help="pairs CSV to write")
    p.add_argument("--no-reference", action="store_true", help="do not add the reference as a system")
    p.add_argument("--n-clips", type=int, default=None, help="random sample of clips (seeded)")
    p.add_argument("--seed", type=int, default=0, help="seed of the clip sample")

    p = add_command(group, "serve", _serve, "serve the blind A/B rating page locally")
    p.add_argument("--pairs", required=True, help="pairs CSV from make-pairs")
    p.add_argument("--db", required=True, help="SQLite vote store (created if absent)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback: this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (0: any free one)")
    p.add_argument("--pool", default="human", help="pool name recorded with each vote")
    p.add_argument("--seed", type=int, default=0, help="seed of the shown order and item order")
    p.add_argument("--audio-root", default=None,
                   help="serve audio files under this folder only, symbolic links resolved "
                        "(default: the deepest folder holding every audio file of --pairs)")

    p = add_command(group, "judge", _judge, "LLM judge pool over an OpenAI-compatible API")
    p.add_argument("--pairs", required=True, help="pairs CSV from make-pairs")
    p.add_argument("--db", required=True, help="SQLite vote store (resumes from it)")
    p.add_argument("--out", required=True, help="ratings CSV of this pool's votes")
    p.add_argument("--pool", required=True, help="pool name, e.g. audio_llm or text_llm")
    p.add_argument("--mode", choices=("audio", "text"), required=True,
                   help="audio: the judge hears the clip; text: it reads the reference caption")
    p.add_argument("--model", action="append", required=True, help="judge model (repeatable)")
    p.add_argument("--base-url", default="https://api.openai.com/v1",
                   help="OpenAI-compatible API root, without credentials (the key: --api-key-env)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="env variable holding the key")
    p.add_argument("--env-file", "--dotenv", dest="env_file", default=".env",
                   help="KEY=VALUE file read when the variable is unset ('' for none)")
    p.add_argument("--seed", type=int, default=0, help="seed of the order the captions are shown in (--one-order)")
    p.add_argument("--one-order", action="store_true",
                   help="ask each item once, in a seeded random order (default: in both orders, stored as "
                        "raters MODEL#AB and MODEL#BA)")
    p.add_argument("--max-answer-attempts", type=int, default=3,
                   help="asks per item before a malformed answer is recorded as a failure")
    p.add_argument("--max-retries", type=int, default=4, help="retries of a transient failure (timeout, 429, 5xx)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each answer")
    p.add_argument("--max-connection-failures", type=int, default=3,
                   help="stop after this many consecutive connection failures (0: never)")
    p.add_argument("--extra-body", default="", help="JSON merged into each request body")

    p = add_command(group, "export", _export, "write all votes of a store as a ratings CSV")
    p.add_argument("--db", required=True, help="SQLite vote store")
    p.add_argument("--out", required=True, help="ratings CSV to write")
