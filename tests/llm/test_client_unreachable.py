"""The shared chat client stops on a dead endpoint instead of retrying every request."""

from __future__ import annotations

import pytest

from clapcap.llm import ChatClient, EndpointUnreachable, LLMError, RetryPolicy


def _client(url: str, **kw) -> tuple[ChatClient, list[float]]:
    sleeps: list[float] = []
    retry = RetryPolicy(max_retries=kw.pop("max_retries", 5), backoff_s=1.0)
    return ChatClient(url, "m", retry=retry, sleep=sleeps.append, **kw), sleeps


def test_closed_port_stops_after_n_consecutive_failures(closed_port_url):
    client, sleeps = _client(closed_port_url)
    with pytest.raises(EndpointUnreachable) as err:
        client.complete([{"role": "user", "content": "hi"}])
    msg = str(err.value)
    assert closed_port_url + "/chat/completions" in msg and "3 consecutive connection failures" in msg
    assert "Connection refused" in msg and isinstance(err.value, LLMError)
    assert client.n_requests == 3 and sleeps == [1.0, 2.0]  # not the 6 attempts of max_retries=5


def test_count_spans_requests_and_can_be_turned_off(closed_port_url):
    # One attempt per request (no retries): the third request stops the caller.
    client, _ = _client(closed_port_url, max_retries=0, max_connection_failures=3)
    for _ in range(2):
        with pytest.raises(LLMError) as err:
            client.complete([])
        assert not isinstance(err.value, EndpointUnreachable)
    with pytest.raises(EndpointUnreachable):
        client.complete([])
    off, _ = _client(closed_port_url, max_retries=6, max_connection_failures=0)
    with pytest.raises(LLMError, match="after 7 attempts") as err:
        off.complete([])
    assert not isinstance(err.value, EndpointUnreachable)
    with pytest.raises(ValueError, match="max_connection_failures"):
        ChatClient(closed_port_url, max_connection_failures=-1)


def test_an_http_answer_resets_the_count(closed_port_url, fake_openai):
    fake_openai.default = lambda _body: fake_openai.chat("ok")
    client, _ = _client(closed_port_url, max_retries=0)
    live = f"{fake_openai.base_url}/chat/completions"
    for _ in range(2):  # 2 failures, then an answer, then 2 more: never 3 in a row
        with pytest.raises(LLMError):
            client.complete([])
    client.url, dead = live, client.url
    assert client.complete([]) == "ok" and client.connection_failures == 0
    client.url = dead
    for _ in range(2):
        with pytest.raises(LLMError) as err:
            client.complete([])
        assert not isinstance(err.value, EndpointUnreachable)
