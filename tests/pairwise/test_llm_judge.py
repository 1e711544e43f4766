"""LLM judges against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import logging

import pytest
from fake_openai import FakeOpenAI

from clapcap.cli import main
from clapcap.llm import EndpointUnreachable
from clapcap.pairwise.llm_judge import (
    ChatClient,
    ChatError,
    JudgeConfig,
    load_api_key,
    parse_choice,
    run_judges,
)
from clapcap.pairwise.pairs import read_pairs
from clapcap.pairwise.ratings import read_ratings
from clapcap.pairwise.store import VoteStore, shown_order

KEY = "sk-test-SECRET-123"


def _judge_answer(body: dict):
    """The default judge: it picks the caption that mentions a dog ("dog" wins), else "2"."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else content[-1]["text"]
    line1 = text.split("Caption 1:")[1].split("\n")[0]
    return FakeOpenAI.chat("1" if "dog" in line1 else "Caption 2.")


@pytest.fixture
def fake_api():
    """The suite's fake OpenAI server answering as a judge; ``by_model`` scripts a judge."""
    api = FakeOpenAI(default=_judge_answer)
    yield api
    api.close()


def test_parse_choice():
    assert parse_choice("2") == "2" and parse_choice("Caption 1.") == "1"
    assert parse_choice("Answer: 2\n") == "2"
    assert parse_choice("1 or 2") is None and parse_choice("neither") is None
    assert parse_choice("1.5") is None and parse_choice("") is None


def test_load_api_key_env_then_dotenv(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    dotenv = tmp_path / ".env"
    dotenv.write_text("OTHER=1\nexport JUDGE_KEY='from-file'\n")
    assert load_api_key("JUDGE_KEY", dotenv) == "from-file"
    monkeypatch.setenv("JUDGE_KEY", "from-env")
    assert load_api_key("JUDGE_KEY", dotenv) == "from-env"
    with pytest.raises(ValueError, match="NOPE_KEY") as err:
        load_api_key("NOPE_KEY", tmp_path / "missing.env")
    assert "from" not in str(err.value)


def test_client_retries_with_backoff_then_fails(fake_api):
    sleeps: list[float] = []
    client = ChatClient(fake_api.url, api_key=KEY, max_retries=3, backoff_s=0.5, sleep=sleeps.append)
    fake_api.by_model["m"] = [fake_api.error(503), fake_api.error(429), fake_api.raw(200, "not json"),
                              fake_api.chat("ok")]
    assert client.complete("m", [{"role": "user", "content": "hi"}]) == "ok"
    assert sleeps == [0.5, 1.0, 2.0]
    fake_api.by_model["m"] = [fake_api.error(500)] * 5
    with pytest.raises(ChatError, match="HTTP 500 after 4 attempts"):
        client.complete("m", [])
    fake_api.by_model["m"] = [fake_api.error(401)]
    with pytest.raises(ChatError, match="HTTP 401 .not retried") as err:
        client.complete("m", [])
    assert KEY not in str(err.value) and KEY not in repr(client)


def test_judge_pools_resume_and_record_failures(study, fake_api, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("FAKE_KEY", KEY)
    db = tmp_path / "judges.sqlite"
    out = tmp_path / "audio.csv"
    # judge-b answers garbage on its first item three times -> a recorded failure.
    fake_api.by_model["judge-b"] = [fake_api.chat(t) for t in ("I cannot decide", "both", "maybe 1 maybe 2")]
    cfg = JudgeConfig(pool="audio_llm", models=["judge-a", "judge-b"], mode="audio",
                      base_url=fake_api.url, api_key_env="FAKE_KEY", dotenv="", backoff_s=0.0)
    counts = run_judges(study["pairs"], db, cfg, out=out)
    assert counts == {"pool": "audio_llm", "votes": 17, "failures": 1, "skipped": 0}
    assert all(r["auth"] == f"Bearer {KEY}" for r in fake_api.requests)
    assert KEY not in caplog.text
    audio_req = fake_api.requests[0]["body"]["messages"][-1]["content"]
    assert audio_req[0]["type"] == "input_audio" and audio_req[0]["input_audio"]["format"] == "wav"
    ratings = read_ratings(out)
    assert set(ratings["pool"]) == {"audio_llm"} and len(ratings) == 17
    # De-randomised: the fake judge always prefers the dog caption (gpt2 over t5), in any order.
    gpt2_vs_t5 = ratings[ratings["pair_id"] == "gpt2|t5"]
    assert set(gpt2_vs_t5["choice"]) == {"A"} and set(gpt2_vs_t5["shown_order"]) == {"AB", "BA"}
    failures = VoteStore(db).failures()
    assert failures["rater"].tolist() == ["judge-b"] and "malformed" in failures["error"].iloc[0]
    # A rerun only retries the failed item.
    n_requests = len(fake_api.requests)
    again = run_judges(study["pairs"], db, cfg, out=out)
    assert again == {"pool": "audio_llm", "votes": 1, "failures": 0, "skipped": 17}
    assert len(fake_api.requests) == n_requests + 1 and VoteStore(db).failures().empty


def test_text_pool_cli_sees_reference_not_audio(study, fake_api, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", KEY)
    out = tmp_path / "text.csv"
    rc = main(["pairwise", "judge", "--pairs", str(study["pairs"]), "--db", str(tmp_path / "j.sqlite"),
               "--out", str(out), "--pool", "text_llm", "--mode", "text", "--model", "t1",
               "--base-url", fake_api.url, "--api-key-env", "FAKE_KEY", "--dotenv", ""])
    assert rc == 0
    first = fake_api.requests[0]["body"]["messages"][-1]["content"]
    assert isinstance(first, str) and "Reference description of the clip: a dog barks" in first
    pairs = read_pairs(study["pairs"]).set_index("item_id")
    item = fake_api.requests[0]["body"]
    ratings = read_ratings(out)
    assert len(ratings) == len(pairs) and set(ratings["rater"]) == {"t1"}
    row = ratings.iloc[0]
    assert row["shown_order"] == shown_order(0, "t1", row["item_id"])
    assert item["temperature"] == 0.0


def test_judge_stops_on_a_dead_endpoint(study, tmp_path, closed_port_url, monkeypatch, capsys):
    """Against a closed port the judge stops with one error naming the endpoint (it used to
    retry every item and end with {'votes': 0, 'failures': 24})."""
    monkeypatch.setenv("FAKE_KEY", KEY)
    db = tmp_path / "j.sqlite"
    cfg = JudgeConfig(pool="text_llm", models=["m1", "m2"], mode="text", base_url=closed_port_url,
                      api_key_env="FAKE_KEY", dotenv="", backoff_s=0.0)
    with pytest.raises(EndpointUnreachable, match="3 consecutive connection failures") as err:
        run_judges(study["pairs"], db, cfg)
    assert closed_port_url in str(err.value) and isinstance(err.value, ChatError)
    assert VoteStore(db).failures().empty and VoteStore(db).votes().empty
    # Through the CLI, one attempt per item: two items fail, the third stops the run.
    rc = main(["pairwise", "judge", "--pairs", str(study["pairs"]), "--db", str(db), "--out",
               str(tmp_path / "t.csv"), "--pool", "text_llm", "--mode", "text", "--model", "m1",
               "--base-url", closed_port_url, "--api-key-env", "FAKE_KEY", "--dotenv", "",
               "--max-retries", "0"])
    stderr = capsys.readouterr().err
    assert rc == 1 and stderr.splitlines()[-1].startswith("clapcap: error: ") and closed_port_url in stderr
    assert "endpoint unreachable" in stderr and len(VoteStore(db).failures()) == 2
