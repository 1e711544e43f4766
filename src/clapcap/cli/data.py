"""`clapcap data ...`: prepare, validate and inspect datasets."""

from __future__ import annotations

import argparse

from clapcap.cli._common import add_command, add_group
from clapcap.cli.fetch import add_fetch


def _prepare(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.data.config import DataParams
    from clapcap.data.listing import DEFAULT_MEMO
    from clapcap.data.prepare import prepare_data

    print(prepare_data(load_section(DataParams, "data", args.params), memo_path=DEFAULT_MEMO))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.data.config import DataParams
    from clapcap.data.listing import DEFAULT_MEMO
    from clapcap.quality.validate import validate_data

    # A violation raises DataValidationError: `clapcap: error: ...`, exit 1.
    validate_data(load_section(DataParams, "data", args.params), args.report_dir, memo_path=DEFAULT_MEMO)
    return 0


def _flow(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.data.config import DataParams
    from clapcap.data.listing import DEFAULT_MEMO
    from clapcap.flows.data import data_flow

    result = data_flow(load_section(DataParams, "data", args.params), args.report_dir, memo_path=str(DEFAULT_MEMO))
    print(result)
    return 0 if result["validation_passed"] else 1


def register(subparsers, name: str, help_text: str) -> None:
    group = add_group(subparsers, name, help_text)
    for cmd, fn, text in (("prepare", _prepare, "build the manifest (and synthetic audio) from params.yaml"),
                          ("validate", _validate, "run the great-expectations suites; exit 1 on a violation"),
                          ("flow", _flow, "run prepare + validate as a Prefect flow")):
        p = add_command(group, cmd, fn, text)
        p.add_argument("--params", default="params.yaml", help="parameter file (default params.yaml)")
        if cmd != "prepare":
            p.add_argument("--report-dir", default="reports/data", help="where validation.{json,md} go")
    add_fetch(group)
