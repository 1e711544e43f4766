"""Endpoint failures of the shared chat client, on every LLM path that uses it.

A refused key (HTTP 401/403) is not an item's fault: the first one stops the run, names
the endpoint and the key's variable (never its value), and the client sends nothing more.
Timeouts and answers that are not JSON, once the retries are spent, stop the run too.
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from clapcap.errors import error_message, exit_code
from clapcap.llm import (
    ChatClient,
    EndpointError,
    KeyRefused,
    RetryPolicy,
    require_api_key,
    resolve_api_key,
)

KEY = "sk-test-NEVER-SHOWN-42"


def _client(url: str, key_source: str, tmp_path, monkeypatch, **kw) -> ChatClient:
    """A client whose key comes from ``$FAKE_KEY`` or, with ``key_source="dotenv"``, from a .env."""
    dotenv = tmp_path / ".env"
    monkeypatch.delenv("FAKE_KEY", raising=False)
    if key_source == "env":
        monkeypatch.setenv("FAKE_KEY", KEY)
    else:
        dotenv.write_text(f"FAKE_KEY='{KEY}'\n")
    retry = RetryPolicy(max_retries=kw.pop("max_retries", 3), backoff_s=0.0)
    return ChatClient(url, "m", api_key=require_api_key("FAKE_KEY", dotenv), retry=retry, **kw)


@pytest.mark.parametrize(("status", "key_source", "names"), [
    (401, "env", "$FAKE_KEY"), (403, "dotenv", "FAKE_KEY in "),
])
def test_refused_key_is_named_and_no_further_request_is_sent(fake_openai, tmp_path, monkeypatch,
                                                             status, key_source, names):
    fake_openai.default = lambda _body: fake_openai.error(status)
    client = _client(fake_openai.base_url, key_source, tmp_path, monkeypatch)
    for _ in range(3):  # the first request is refused; the others are never sent
        with pytest.raises(KeyRefused) as err:
            client.complete([{"role": "user", "content": "hi"}])
        msg = error_message(err.value)
        assert msg.startswith(f"{fake_openai.base_url}/chat/completions: model m: HTTP {status}")
        assert names in msg and KEY not in msg and KEY not in repr(err.value)
        assert isinstance(err.value, EndpointError) and exit_code(err.value) == 1
    assert len(fake_openai.requests) == 1


def test_no_key_sent_says_so(fake_openai, tmp_path, monkeypatch):
    monkeypatch.delenv("FAKE_KEY", raising=False)
    fake_openai.default = lambda _body: fake_openai.error(401)
    key = resolve_api_key("FAKE_KEY", tmp_path / "missing.env")
    client = ChatClient(fake_openai.base_url, "m", api_key=key)
    with pytest.raises(KeyRefused, match="HTTP 401 .not retried.: the request carried no API key"):
        client.complete([])
    assert len(fake_openai.requests) == 1


def test_timeout_and_non_json_stop_after_the_retries(fake_openai, tmp_path, monkeypatch):
    client = _client(fake_openai.base_url, "env", tmp_path, monkeypatch, max_retries=1, timeout_s=0.2)
    fake_openai.delay_s = 0.6
    with pytest.raises(EndpointError) as err:
        client.complete([])
    assert error_message(err.value) == (f"{fake_openai.base_url}/chat/completions: model m: "
                                        "no answer within 0.2 s (TimeoutError) after 2 attempts")
    fake_openai.delay_s = 0.0
    fake_openai.default = lambda _body: fake_openai.raw(200, "<html>sign in</html>")
    with pytest.raises(EndpointError, match="answer is not JSON .* after 2 attempts"):
        client.complete([])
    assert len(fake_openai.requests) == 4


NOT_UTF8 = b"\xff\xfe{not text}"


def test_an_answer_that_is_not_utf8_is_retried_then_names_the_endpoint(fake_openai, tmp_path,
                                                                        monkeypatch):
    """It used to escape as a bare UnicodeDecodeError: exit 2, no endpoint, no retry."""
    client = _client(fake_openai.base_url, "env", tmp_path, monkeypatch, max_retries=2)
    fake_openai.script = [fake_openai.raw(200, NOT_UTF8)]  # one bad answer, then a good one
    assert client.complete([]) == "a caption number 2."
    fake_openai.default = lambda _body: fake_openai.raw(200, NOT_UTF8)
    with pytest.raises(EndpointError) as err:
        client.complete([])
    msg = error_message(err.value)
    assert msg.startswith(f"{fake_openai.base_url}/chat/completions: model m: answer is not UTF-8")
    assert msg.endswith("after 3 attempts") and "0xff" in msg and exit_code(err.value) == 1
    assert len(fake_openai.requests) == 2 + 3


def test_reference_captioner_and_paraphrase_stop_at_answers_that_are_not_utf8(fake_openai, tmp_path,
                                                                             monkeypatch):
    from clapcap.llm import LLMError
    from clapcap.paraphrase.llm import LLMParams, LLMParaphraser
    from clapcap.reference.api import ApiCaptioner, ApiError
    from clapcap.reference.config import ApiConfig, GenerationConfig

    monkeypatch.setenv("FAKE_KEY", KEY)
    fake_openai.default = lambda _body: fake_openai.raw(200, NOT_UTF8)
    wav = tmp_path / "clip.wav"
    sf.write(wav, np.zeros(1600, dtype="float32"), 16000)
    cfg = ApiConfig(base_url=fake_openai.base_url, model="m", api_key_env="FAKE_KEY", env_file="",
                    backoff_s=0.0, max_retries=1)
    with pytest.raises(ApiError, match="still failing .answer is not UTF-8.* after 1 retries") as err:
        ApiCaptioner(cfg, GenerationConfig()).caption(wav)
    assert fake_openai.base_url in str(err.value) and exit_code(err.value) == 1
    assert len(fake_openai.requests) == 2
    params = LLMParams(base_url=fake_openai.base_url, model="m", api_key_env="FAKE_KEY", env_file="",
                       backoff_s=0.0, max_retries=1, cache_path=str(tmp_path / "cache.jsonl"),
                       workers=1)
    with pytest.raises(LLMError, match="answer is not UTF-8.* after 2 attempts") as err:
        LLMParaphraser(params).paraphrase_many(["A dog barks."])
    assert fake_openai.base_url in str(err.value) and exit_code(err.value) == 1
    assert len(fake_openai.requests) == 4


def test_reference_captioner_stops_at_a_refused_key(fake_openai, tmp_path, monkeypatch):
    from clapcap.reference.api import ApiCaptioner, ApiError
    from clapcap.reference.config import ApiConfig, GenerationConfig

    monkeypatch.setenv("FAKE_KEY", KEY)
    wav = tmp_path / "clip.wav"
    sf.write(wav, np.zeros(1600, dtype="float32"), 16000)
    fake_openai.default = lambda _body: fake_openai.error(401)
    cfg = ApiConfig(base_url=fake_openai.base_url, model="m", api_key_env="FAKE_KEY", env_file="",
                    backoff_s=0.0)
    api = ApiCaptioner(cfg, GenerationConfig())
    for _ in range(2):
        with pytest.raises(ApiError, match=r"HTTP 401 .*refused the API key from \$FAKE_KEY") as err:
            api.caption(wav)
        assert KEY not in str(err.value) and fake_openai.base_url in str(err.value)
    assert len(fake_openai.requests) == 1


def test_paraphrase_stops_at_a_refused_key(fake_openai, tmp_path, monkeypatch):
    from clapcap.llm import LLMError
    from clapcap.paraphrase.llm import LLMParams, LLMParaphraser

    monkeypatch.setenv("FAKE_KEY", KEY)
    fake_openai.default = lambda _body: fake_openai.error(401)
    params = LLMParams(base_url=fake_openai.base_url, model="m", api_key_env="FAKE_KEY",
                       env_file="", backoff_s=0.0, cache_path=str(tmp_path / "cache.jsonl"),
                       workers=1)
    with pytest.raises(LLMError, match=r"HTTP 401 .*refused the API key from \$FAKE_KEY") as err:
        LLMParaphraser(params).paraphrase_many(["A dog barks.", "A bell rings.", "Rain falls."])
    assert KEY not in str(err.value) and len(fake_openai.requests) == 1


def test_paraphrase_without_a_key_names_the_variable_to_set(fake_openai, tmp_path, monkeypatch):
    from clapcap.llm import LLMError
    from clapcap.paraphrase.llm import LLMParams, LLMParaphraser

    monkeypatch.delenv("FAKE_KEY", raising=False)
    fake_openai.default = lambda _body: fake_openai.error(401)
    params = LLMParams(base_url=fake_openai.base_url, model="m", api_key_env="FAKE_KEY", env_file="",
                       backoff_s=0.0, cache_path=str(tmp_path / "cache.jsonl"), workers=1)
    with pytest.raises(LLMError, match=r"the request carried no API key; set one in \$FAKE_KEY"):
        LLMParaphraser(params).paraphrase_many(["A dog barks."])


def test_every_llm_path_declares_its_endpoint_with_one_config():
    import dataclasses

    from clapcap.llm.config import EndpointConfig
    from clapcap.pairwise.llm_judge import JudgeConfig
    from clapcap.paraphrase.llm import LLMParams
    from clapcap.reference.config import ApiConfig

    shared = {f.name for f in dataclasses.fields(EndpointConfig)}
    assert {"base_url", "api_key_env", "env_file", "timeout_s", "max_retries", "extra_body"} <= shared
    for cls in (LLMParams, ApiConfig, JudgeConfig):
        assert issubclass(cls, EndpointConfig)
        names = {f.name for f in dataclasses.fields(cls)}
        assert shared <= names and "dotenv" not in names, cls
