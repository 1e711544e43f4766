"""`clapcap captioning caption` on a store without a registered captioner (a fresh clone): one
`clapcap: error:` line that says how to build one, exit 2, no MLflow traceback."""

from __future__ import annotations

import pytest

from clapcap import tracking
from clapcap.cli import main


def test_caption_on_a_fresh_clone_says_how_to_build_a_captioner(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a fresh clone: the default store, mlruns/mlflow.db, holds nothing
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["captioning", "caption", str(tmp_path / "a.wav")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("clapcap: error:") == 1 and len(err.strip().splitlines()) == 1
    assert "no model is registered as 'clapcap-captioner'" in err and "dvc repro caption_register" in err


def test_loading_an_alias_no_version_holds_says_how_to_promote(mlflow_uri, capsys):
    import mlflow

    from clapcap.tracked.captioning_register import load_champion
    from clapcap.tracking import RegistryError

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    with tracking.tracked("register", experiment="t-caption-alias", name="unit/echo"):
        tracking.register_model(tracking.log_pyfunc_model(Echo(), "echo"), "t-no-champion")
    with pytest.raises(RegistryError, match=r"has no @champion .* clapcap registry promote t-no-champion VERSION"):
        load_champion("t-no-champion")
    assert main(["captioning", "caption", "a.wav", "--model", "models:/t-no-champion/7"]) == 2
    assert "has no version 7" in capsys.readouterr().err
