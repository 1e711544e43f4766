"""Credentials written into an LLM ``base_url`` (``http://user:secret@host/v1``).

They used to be logged as an MLflow param and printed in error lines. Every config of an
endpoint refuses them at load (pointing at ``api_key_env``), and wherever a base URL is
shown or logged it goes through :func:`clapcap.utils.urls.redact_url` first.
"""

from __future__ import annotations

import pytest

from clapcap.config import ConfigError, from_dict
from clapcap.errors import exit_code
from clapcap.llm import ChatClient
from clapcap.pairwise.llm_judge import JudgeConfig
from clapcap.paraphrase.llm import LLMParams
from clapcap.reference.config import ApiConfig
from clapcap.utils.urls import redact_url

SECRET = "s3cr3t-PASS"
URL = f"http://alice:{SECRET}@127.0.0.1:8000/v1"


@pytest.mark.parametrize(("text", "shown"), [
    (URL, "http://***@127.0.0.1:8000/v1"),
    (f"see https://bob:{SECRET}@h.example/v1/x and http://h2/v1", "see https://***@h.example/v1/x and http://h2/v1"),
    (f"http://tok:p@ss{SECRET}@host/v1", "http://***@host/v1"),  # an '@' in the password
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("not a url: a@b", "not a url: a@b"),
])
def test_redact_url_hides_the_user_info(text, shown):
    assert redact_url(text) == shown


@pytest.mark.parametrize(("cls", "extra"), [
    (LLMParams, {}), (ApiConfig, {"model": "m"}), (JudgeConfig, {"pool": "p", "models": ["m"]}),
])
def test_every_endpoint_config_refuses_credentials_in_base_url(cls, extra):
    with pytest.raises(ConfigError) as err:
        from_dict(cls, {"base_url": URL, **extra}, where="section.llm")
    msg = str(err.value)
    assert SECRET not in msg and "alice" not in msg and "\n" not in msg and exit_code(err.value) == 2
    assert msg.startswith("section.llm: base_url 'http://***@127.0.0.1:8000/v1' ")
    assert "api_key_env" in msg and "$OPENAI_API_KEY" in msg


def test_the_client_refuses_them_too_without_showing_them():
    with pytest.raises(ValueError) as err:
        ChatClient(URL, "m", key_env="MY_KEY")
    assert SECRET not in str(err.value) and "$MY_KEY" in str(err.value)


def test_judge_cli_refuses_them_with_one_error_line(tmp_path, capsys):
    from clapcap.cli import main

    rc = main(["pairwise", "judge", "--pairs", str(tmp_path / "pairs.csv"), "--db", str(tmp_path / "j.sqlite"),
               "--out", str(tmp_path / "t.csv"), "--pool", "text_llm", "--mode", "text", "--model", "m1",
               "--base-url", URL])
    err = capsys.readouterr().err
    assert rc == 2 and SECRET not in err and "alice" not in err
    assert err.strip().splitlines()[-1].startswith("clapcap: error: ") and "api_key_env" in err
    assert not (tmp_path / "j.sqlite").exists()


def test_mlflow_params_show_base_urls_redacted():
    from clapcap.tracking.store import clean_params

    params = clean_params({"llm": {"base_url": URL, "model": "m"}, "note": f"from {URL}"})
    assert params["llm/base_url"] == "http://***@127.0.0.1:8000/v1" and SECRET not in str(params)
    assert params["llm/model"] == "m"
