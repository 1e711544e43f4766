"""Every stage script and every `clapcap` verb answers `--help` and does nothing else.

`python pipelines/prepare_data.py --help` used to synthesise the corpus: a script that took no
arguments ignored them. Stage scripts now go through :func:`clapcap.entry.run_script`, which
parses the command line before anything runs: `-h`/`--help` prints the script's docstring and
exits 0, an argument the script does not take exits 2 with a usage line. The scripts run
in-process (one import of torch for all of them); two also run as real processes.
"""

from __future__ import annotations

import argparse
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from clapcap.cli import build_parser, main
from clapcap.entry import script_parser

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "pipelines").glob("*.py"))


def _doc_lines(script: Path) -> list[str]:
    doc = runpy.run_path(str(script), run_name="not_main")["__doc__"]
    assert doc, f"{script.name} has no docstring"
    return [line.strip() for line in doc.splitlines() if line.strip()]


def _run_in_process(script: Path, args: list[str], monkeypatch) -> int:
    monkeypatch.setattr(sys, "argv", [str(script), *args])
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(script), run_name="__main__")
    return info.value.code


def test_every_stage_script_is_found():
    assert len(SCRIPTS) >= 25 and (ROOT / "pipelines" / "prepare_data.py") in SCRIPTS
    assert len(STAGE_COMMANDS) >= 25 and {name for name, _ in STAGE_COMMANDS} <= {s.name for s in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_stage_script_help_prints_its_docstring_and_does_nothing(script, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # an empty folder: no params.yaml, and any file written would show
    assert _run_in_process(script, ["--help"], monkeypatch) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {script.name}")
    missing = [line for line in _doc_lines(script) if line not in out]
    assert not missing, f"--help of {script.name} lacks docstring lines {missing}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_stage_script_refuses_an_unknown_argument(script, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _run_in_process(script, ["--no-such-option"], monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {script.name}") and f"{script.name}: error: " in err  # or a missing argument
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name,args", [("prepare_data.py", ["--help"]), ("validate_data.py", ["-h"])])
def test_stage_script_help_as_a_process(name, args, tmp_path):
    """The reported case (prepare_data wrote data/corpus), and a script with arguments."""
    out = subprocess.run([sys.executable, str(ROOT / "pipelines" / name), *args], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert _doc_lines(ROOT / "pipelines" / name)[0] in out.stdout and out.stderr == ""
    assert list(tmp_path.iterdir()) == []


def _stage_commands() -> list[tuple[str, list[str]]]:
    """Each dvc.yaml ``cmd`` as (script, arguments), a ``${...}`` interpolation read as "1"."""
    text = re.sub(r"\$\{[^}]*\}", "1", (ROOT / "dvc.yaml").read_text())
    found = re.findall(r"cmd: python pipelines/(\S+\.py)(.*)", text)
    return sorted({(name, tuple(shlex.split(rest))) for name, rest in found})


STAGE_COMMANDS = _stage_commands()


@pytest.mark.parametrize("name,args", STAGE_COMMANDS, ids=[f"{n} {' '.join(a)}" for n, a in STAGE_COMMANDS])
def test_every_dvc_stage_command_is_accepted(name, args):
    """No dvc.yaml stage passes an argument its script now refuses (parsing only, nothing runs)."""
    namespace = runpy.run_path(str(ROOT / "pipelines" / name), run_name="not_main")
    parser = script_parser(namespace["main"])
    if "arguments" in namespace:
        namespace["arguments"](parser)
    parser.parse_args(list(args))


def _verbs() -> list[list[str]]:
    """Every group and every command of the `clapcap` parser, as an argv prefix."""
    def children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(subs[0].choices) if subs else {}

    verbs = []
    for group, group_parser in children(build_parser()).items():
        verbs.append([group])
        verbs.extend([group, command] for command in children(group_parser))
    return verbs


VERBS = _verbs()


def test_every_verb_is_found():
    assert ["data", "flow"] in VERBS and ["pipeline"] in VERBS and len(VERBS) > 40


@pytest.mark.parametrize("verb", VERBS, ids=[" ".join(v) for v in VERBS])
def test_cli_verb_help_does_nothing(verb, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main([*verb, "--help"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: clapcap {' '.join(verb)}")
    assert list(tmp_path.iterdir()) == []
