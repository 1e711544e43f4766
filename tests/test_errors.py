"""Every user-facing error reaches the user as `clapcap: error: ...` with an exit code.

The CLI and the DVC stage scripts share one entry path (:func:`clapcap.entry.run_entry`):
domain errors print one line on stderr, never a traceback; bugs keep their traceback.
"""

from __future__ import annotations

import logging
import os
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clapcap.clap.train import TrainingCollapsed
from clapcap.cli import main
from clapcap.config import ConfigError
from clapcap.data.audio import AudioError
from clapcap.data.dump import DumpError
from clapcap.data.manifest import ManifestError
from clapcap.entry import run_entry
from clapcap.errors import AssetError, ClapcapError, exit_code
from clapcap.llm.errors import LLMError, MissingKeyError
from clapcap.pairwise.ratings import RatingsError
from clapcap.quality.validate import DataValidationError

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    src = str(ROOT / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("err,code", [
    (ConfigError("x"), 2), (DumpError("x"), 2), (AudioError("a.wav", "x"), 2), (ManifestError("x"), 2),
    (RatingsError("x"), 2), (MissingKeyError("x"), 2), (ValueError("x"), 2), (FileNotFoundError("x"), 2),
    (LLMError("x"), 1), (TrainingCollapsed("x"), 1), (DataValidationError("x"), 1), (AssetError("x"), 1),
    (PermissionError(13, "Permission denied", "out.json"), 1),
    (KeyError("x"), None), (TypeError("x"), None), (OSError("no file named"), None),
])
def test_exit_codes(err, code):
    assert exit_code(err) == code


def test_domain_errors_keep_their_old_bases():
    assert issubclass(AudioError, ValueError) and issubclass(ConfigError, ValueError)
    assert issubclass(LLMError, RuntimeError) and issubclass(TrainingCollapsed, RuntimeError)
    assert all(issubclass(c, ClapcapError) for c in (AudioError, ConfigError, LLMError, TrainingCollapsed))


def test_stage_script_bad_param_names_file_and_line(tmp_path):
    """A wrong type and an unknown key in params.yaml, through a DVC stage script."""
    script = ROOT / "pipelines" / "prepare_data.py"
    cases = [("data:\n  out_dir: corpus\n  synthetic:\n    n_clips: many\n",
              "params.yaml:4: data.synthetic.n_clips: expected int, found str 'many'"),
             ("# the data stage\ndata:\n  out_dir: corpus\n\n  n_clip: 3\n",
              "params.yaml:5: unknown key(s) data.n_clip for DataParams")]
    for text, expected in cases:
        (tmp_path / "params.yaml").write_text(text)
        out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                             env=_env(), timeout=120)
        assert out.returncode == 2, out.stderr
        assert f"clapcap: error: {expected}" in out.stderr
        assert "Traceback" not in out.stderr


def _run_stage(script, section, tmp_path, monkeypatch, capsys):
    """Run ``pipelines/<script>`` as ``__main__`` in ``tmp_path`` with a params.yaml holding
    ``section``; returns its exit code and stderr."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [script])  # the script's command line, not pytest's
    (tmp_path / "params.yaml").write_text(section)
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(ROOT / "pipelines" / script), run_name="__main__")
    return info.value.code, capsys.readouterr().err


@pytest.mark.parametrize("script,section,target,error", [
    ("train_clap.py", "train_clap: {}\n", "clapcap.tracked.clap.run_synth_clap",
     TrainingCollapsed("val R@10 0.08 <= 3 x chance 0.03: training collapsed")),
    ("robust_paraphrase.py", "robust_paraphrase: {}\n", "clapcap.tracked.paraphrase.run_paraphrase",
     LLMError("http://127.0.0.1:9/v1: connection refused after 3 attempts")),
])
def test_stage_script_runtime_error_is_one_line(script, section, target, error, tmp_path, monkeypatch, capsys):
    def fail(*_args, **_kwargs):
        raise error

    monkeypatch.setattr(target, fail)
    code, err = _run_stage(script, section, tmp_path, monkeypatch, capsys)
    assert code == 1
    assert f"clapcap: error: {error}" in err and "Traceback" not in err


def test_cli_llm_error_is_one_line(tmp_path, monkeypatch, capsys):
    def fail(_params):
        raise LLMError("http://127.0.0.1:9/v1: HTTP 401 after 1 attempt")

    monkeypatch.setattr("clapcap.tracked.paraphrase.run_paraphrase", fail)
    params = tmp_path / "params.yaml"
    params.write_text("robust_paraphrase:\n  backend: llm\n")
    assert main(["robust", "paraphrase", "--params", str(params)]) == 1
    err = capsys.readouterr().err
    assert "clapcap: error: http://127.0.0.1:9/v1: HTTP 401" in err and "Traceback" not in err


def test_cli_bogus_npz_names_the_file(tmp_path, capsys):
    bogus = tmp_path / "bogus.npz"
    bogus.write_text("clip_id,caption\na,a dog barks\n")
    assert main(["retrieval", "evaluate", str(bogus), "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert f"clapcap: error: {bogus}: not a valid .npz embedding dump" in err
    truncated = tmp_path / "truncated.npz"
    np.savez(truncated, a=np.zeros(100))
    truncated.write_bytes(truncated.read_bytes()[:200])
    assert main(["retrieval", "evaluate", str(truncated), "--out", str(tmp_path / "m.json")]) == 2
    assert f"{truncated}: not a valid .npz embedding dump" in capsys.readouterr().err


def test_verbose_shows_traceback_and_bugs_keep_theirs(capsys):
    def user_error():
        raise ConfigError("params.yaml:3: data.x: expected int")

    assert run_entry(user_error, verbose=True) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().endswith("clapcap: error: params.yaml:3: data.x: expected int")

    def bug():
        raise KeyError("internal")

    with pytest.raises(KeyError):
        run_entry(bug, verbose=False)


def test_entry_logging_is_restored():
    root = logging.getLogger()
    before = (root.level, list(root.handlers), logging.getLogger("clapcap").level, os.environ.get("MLFLOW_LOGGING_LEVEL"))
    assert run_entry(lambda: 0) == 0
    assert (root.level, list(root.handlers), logging.getLogger("clapcap").level,
            os.environ.get("MLFLOW_LOGGING_LEVEL")) == before


def test_entry_sets_library_defaults_for_the_run_only(monkeypatch):
    """Analytics and telemetry off, MLflow's loggers left to ours; a user's own setting wins."""
    from clapcap.entry import ENV_DEFAULTS

    for key in ENV_DEFAULTS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DVC_NO_ANALYTICS", "0")
    seen: dict[str, str | None] = {}
    assert run_entry(lambda: seen.update({key: os.environ.get(key) for key in ENV_DEFAULTS})) == 0
    assert seen == {**ENV_DEFAULTS, "DVC_NO_ANALYTICS": "0"}
    assert seen["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false" and seen["MLFLOW_CONFIGURE_LOGGING"] == "false"
    assert [key for key in ENV_DEFAULTS if key in os.environ] == ["DVC_NO_ANALYTICS"]


def test_library_warnings_show_with_verbose_only(capsys):
    """A library's warning (MLflow's, coloured with raw ANSI codes) is not a command's output."""
    import warnings

    def noisy(tag: str):
        def run():
            warnings.warn(f"\x1b[33mAdd type hints ({tag})\x1b[0m", UserWarning, stacklevel=1)
            logging.getLogger("mlflow.pyfunc").warning("Passing a Python object (%s)", tag)
            logging.getLogger("clapcap.some.step").warning("our own warning (%s)", tag)
        return run

    assert run_entry(noisy("quiet"), verbose=False) == 0
    err = capsys.readouterr().err
    assert "our own warning (quiet)" in err and "\x1b[" not in err and "Passing" not in err
    assert run_entry(noisy("verbose"), verbose=True) == 0
    err = capsys.readouterr().err
    assert "Add type hints (verbose)" in err and "Passing a Python object (verbose)" in err


def test_data_validate_is_quiet(tiny_corpus, tmp_path):
    """No great-expectations INFO chatter nor progress bars without -v (213 lines before)."""
    params = tmp_path / "params.yaml"
    params.write_text(f"data:\n  out_dir: {tiny_corpus}\n  synthetic: {{n_clips: 40, seed: 1, "
                      "min_duration_s: 2.0, max_duration_s: 4.0, music_fraction: 0.2}\n")
    out = subprocess.run([str(BIN / "clapcap"), "data", "validate", "--params", str(params),
                          "--report-dir", str(tmp_path / "r")], capture_output=True, text=True,
                         env=_env(), timeout=180)
    assert out.returncode == 0, out.stderr
    assert "great_expectations" not in out.stderr and "Calculating Metrics" not in out.stderr
    assert "data validation passed" in out.stderr
    assert len(out.stderr.splitlines()) <= 3


def test_csv_rows_are_counted_like_a_spreadsheet(tmp_path):
    """Reader messages count the header as row 1, as ratings and reference splits already did."""
    from clapcap.data.readers import read_clotho, read_folder

    caps = ",".join(f"caption_{i}" for i in range(1, 6))
    (tmp_path / "clotho.csv").write_text(f"file_name,{caps}\na.wav,a dog barks,b,c,d,e\nb.wav,,,,,\n")
    with pytest.raises(ManifestError, match=r"clotho.csv: row 3 \(b.wav\): no non-empty caption"):
        read_clotho(tmp_path, tmp_path / "clotho.csv")
    (tmp_path / "meta.csv").write_text("file_name,caption\nx.wav,\n")
    with pytest.raises(ManifestError, match=r"meta.csv: row 2 \(x.wav\)"):
        read_folder(tmp_path, tmp_path / "meta.csv")


def test_non_checkpoint_names_the_file(tmp_path):
    from clapcap.encoders.convert import ConversionError, convert_laion_checkpoint

    bogus = tmp_path / "630k-audioset-best.pt"
    bogus.write_text("not a checkpoint")
    with pytest.raises(ConversionError, match=f"{bogus}: not a readable PyTorch checkpoint"):
        convert_laion_checkpoint(bogus, tmp_path / "hf")


@pytest.mark.parametrize("script,section,target,report,expected", [
    ("metric_parity.py", "retrieval: {}\n", "clapcap.retrieval.parity.run_parity",
     {"passed": False, "worst_abs_delta": 0.25}, "metric parity failed: worst |delta| 0.25 > tolerance"),
    ("checkpoint_identity.py", "checkpoint_identity: {}\n",
     "clapcap.encoders.crosscheck.run_checkpoint_identity",
     {"identity": {"cross_pipeline_comparable": True}, "control": {"cross_pipeline_comparable": True}},
     "checkpoint identity failed: a differently initialised model was not told apart"),
])
def test_failed_gate_says_why(script, section, target, report, expected, tmp_path, monkeypatch, capsys):
    """A failed gate exits 1 with one line naming the report (it exited 1 silently before)."""
    monkeypatch.setattr(target, lambda *_a, **_k: report)
    code, err = _run_stage(script, section, tmp_path, monkeypatch, capsys)
    assert code == 1
    assert f"clapcap: error: {expected}" in err and "; see " in err and "Traceback" not in err
