"""The command line lists every verb and reports bad input without a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clapcap.cli import main

BIN = Path(sys.executable).parent


def test_help_lists_groups():
    out = subprocess.run([str(BIN / "clapcap"), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "data" in out.stdout


def test_data_validate_reports_violation(tiny_corpus, tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text(f"data:\n  out_dir: {tiny_corpus}\n  max_duration_s: 3.0\n  synthetic: {{n_clips: 40, seed: 1, "
                      "min_duration_s: 2.0, max_duration_s: 4.0, music_fraction: 0.2}\n")
    assert main(["data", "validate", "--params", str(params), "--report-dir", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "clapcap: error: data validation failed" in err and "duration_s" in err


def test_unknown_param_key_is_a_clean_error(tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text("data:\n  n_clip: 3\n")
    assert main(["data", "prepare", "--params", str(params)]) == 2
    assert f"clapcap: error: {params}:2: unknown key(s) data.n_clip" in capsys.readouterr().err


# The variables the CLI sets itself (clapcap.entry); the test process's conftest sets some of them,
# so they are taken out of the commands' environment to test the CLI's own defaults.
_CLI_SETS = ("DVC_NO_ANALYTICS", "PREFECT_SERVER_ANALYTICS_ENABLED", "HF_HUB_DISABLE_TELEMETRY",
             "MLFLOW_CONFIGURE_LOGGING", "MLFLOW_LOGGING_LEVEL", "PREFECT_LOGGING_LEVEL", "CLAPCAP_VERBOSE")
# One of our log lines (clapcap.entry.LOG_FORMAT), or a progress bar redrawn with carriage returns.
_OURS = re.compile(r"^(\d{4}-\d\d-\d\d [\d:,]+ (INFO|WARNING) clapcap\.[\w.]+: |.*\r)")


def test_successful_commands_print_progress_and_result_only(tmp_path):
    """`clapcap data flow` printed Prefect telemetry errors (two tracebacks against a locked
    SQLite database), `train-clap` MLflow warnings in raw ANSI colour codes, and each mp3 with a
    malformed ID3 tag a libmpg123 warning. Real commands, on a tiny corpus with real mp3s."""
    (tmp_path / "params.yaml").write_text(
        "data:\n  out_dir: corpus\n  include_real_audio: true\n  synthetic: {n_clips: 30, max_duration_s: 2.5}\n"
        "train_clap:\n  dataset_dir: corpus\n  out_dir: clap\n  optim: {epochs: 1, batch_size: 8}\n  eval_every: 1\n")
    env = {k: v for k, v in os.environ.items() if k not in _CLI_SETS}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}",
               HF_HUB_OFFLINE="1")
    for verb in (["data", "flow"], ["retrieval", "train-clap"]):
        out = subprocess.run([str(BIN / "clapcap"), *verb], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        err = out.stderr
        assert "Traceback" not in err and "\x1b[" not in err and "ID3" not in err, err
        assert "Warning" not in err and "mlflow" not in err and "prefect" not in err, err
        if verb == ["data", "flow"]:
            assert "'validation_passed': True" in out.stdout
            assert [line for line in err.splitlines() if line and not _OURS.match(line)] == []
        else:
            assert '"model_dir"' in out.stdout


def test_version_names_the_installed_distribution(capsys):
    from importlib.metadata import version


    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"clapcap {version('clapcap')}"


def test_every_verb_shows_its_defaults(capsys):
    """Options with a real default say it in --help (ArgumentDefaultsHelpFormatter)."""
    with pytest.raises(SystemExit):
        main(["retrieval", "evaluate", "--help"])
    out = capsys.readouterr().out
    assert "bootstrap seed (default: 0)" in " ".join(out.split())
    assert "(default: None)" not in out and "(default: False)" not in out


def _verb_parsers(parser, path=()):
    """(command path, parser) of every ``clapcap`` verb and group, walked from the root parser."""
    import argparse

    yield path, parser
    for action in parser._actions:  # argparse keeps sub-parsers only on this private list
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _verb_parsers(child, (*path, name))


def test_every_option_has_help_and_every_real_default_shows():
    """`retrieval embed --batch-size`, `pairwise serve --port`, ... had no help line, so their
    defaults did not show either (argparse shows help only where there is some), and
    `captioning train --lm` said nothing at all."""
    import argparse

    from clapcap.cli import build_parser

    no_help, hidden = [], []
    for path, parser in _verb_parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction | argparse._SubParsersAction):
                continue
            name = " ".join([*path, action.option_strings[-1] if action.option_strings else action.dest])
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                no_help.append(name)
                continue
            shown = " ".join(formatter._expand_help(action).split())
            flag = action.nargs == 0  # store_true and friends: their False says nothing
            if action.default not in (None, argparse.SUPPRESS) and not flag and "default" not in shown \
                    or "(default: )" in shown:
                hidden.append(f"{name}: {shown!r}")
    assert not no_help, f"options without help: {no_help}"
    assert not hidden, f"defaults not shown: {hidden}"
