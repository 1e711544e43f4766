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
                      base_url=fake_api.url, api_key_env="FAKE_KEY", env_file="", backoff_s=0.0)
    counts = run_judges(study["pairs"], db, cfg, out=out)
    # 9 items x 2 models x 2 orders; judge-b's first ask (item 1 shown AB) failed.
    assert counts == {"pool": "audio_llm", "votes": 35, "failures": 1, "skipped": 0}
    assert all(r["auth"] == f"Bearer {KEY}" for r in fake_api.requests)
    assert KEY not in caplog.text
    audio_req = fake_api.requests[0]["body"]["messages"][-1]["content"]
    assert audio_req[0]["type"] == "input_audio" and audio_req[0]["input_audio"]["format"] == "wav"
    ratings = read_ratings(out)
    assert set(ratings["pool"]) == {"audio_llm"} and len(ratings) == 35
    assert set(ratings["rater"]) == {"judge-a#AB", "judge-a#BA", "judge-b#AB", "judge-b#BA"}
    assert (ratings["shown_order"] == ratings["rater"].str[-2:]).all()  # each rater is one order
    # De-randomised: the fake judge always prefers the dog caption (gpt2 over t5), in any order.
    gpt2_vs_t5 = ratings[ratings["pair_id"] == "gpt2|t5"]
    assert set(gpt2_vs_t5["choice"]) == {"A"} and set(gpt2_vs_t5["shown_order"]) == {"AB", "BA"}
    failures = VoteStore(db).failures()
    assert failures["rater"].tolist() == ["judge-b#AB"] and "malformed" in failures["error"].iloc[0]
    # A rerun only retries the failed item.
    n_requests = len(fake_api.requests)
    again = run_judges(study["pairs"], db, cfg, out=out)
    assert again == {"pool": "audio_llm", "votes": 1, "failures": 0, "skipped": 35}
    assert len(fake_api.requests) == n_requests + 1 and VoteStore(db).failures().empty


def test_text_pool_cli_sees_reference_not_audio(study, fake_api, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", KEY)
    out = tmp_path / "text.csv"
    rc = main(["pairwise", "judge", "--pairs", str(study["pairs"]), "--db", str(tmp_path / "j.sqlite"),
               "--out", str(out), "--pool", "text_llm", "--mode", "text", "--model", "t1",
               "--base-url", fake_api.url, "--api-key-env", "FAKE_KEY", "--env-file", ""])
    assert rc == 0
    first = fake_api.requests[0]["body"]["messages"][-1]["content"]
    assert isinstance(first, str) and "Reference description of the clip: a dog barks" in first
    pairs = read_pairs(study["pairs"]).set_index("item_id")
    item = fake_api.requests[0]["body"]
    ratings = read_ratings(out)
    assert len(ratings) == 2 * len(pairs) and set(ratings["rater"]) == {"t1#AB", "t1#BA"}
    assert item["temperature"] == 0.0
    # --one-order: each item once, in the judge's seeded order.
    rc = main(["pairwise", "judge", "--pairs", str(study["pairs"]), "--db", str(tmp_path / "once.sqlite"),
               "--out", str(out), "--pool", "text_llm", "--mode", "text", "--model", "t1", "--one-order",
               "--base-url", fake_api.url, "--api-key-env", "FAKE_KEY", "--env-file", ""])
    ratings = read_ratings(out)
    assert rc == 0 and len(ratings) == len(pairs) and set(ratings["rater"]) == {"t1"}
    assert all(r.shown_order == shown_order(0, "t1", r.item_id) for r in ratings.itertuples())


def test_judge_stops_on_a_dead_endpoint(study, tmp_path, closed_port_url, monkeypatch, capsys):
    """Against a closed port the judge stops with one error naming the endpoint (it used to
    retry every item and end with {'votes': 0, 'failures': 24})."""
    monkeypatch.setenv("FAKE_KEY", KEY)
    db = tmp_path / "j.sqlite"
    cfg = JudgeConfig(pool="text_llm", models=["m1", "m2"], mode="text", base_url=closed_port_url,
                      api_key_env="FAKE_KEY", env_file="", backoff_s=0.0)
    with pytest.raises(EndpointUnreachable, match="3 consecutive connection failures") as err:
        run_judges(study["pairs"], db, cfg)
    assert closed_port_url in str(err.value) and isinstance(err.value, ChatError)
    assert VoteStore(db).failures().empty and VoteStore(db).votes().empty
    # Through the CLI, one attempt per item: the first item's failed attempt stops the run
    # (it used to fail item after item until max_connection_failures).
    rc = main(["pairwise", "judge", "--pairs", str(study["pairs"]), "--db", str(db), "--out",
               str(tmp_path / "t.csv"), "--pool", "text_llm", "--mode", "text", "--model", "m1",
               "--base-url", closed_port_url, "--api-key-env", "FAKE_KEY", "--dotenv", "",
               "--max-retries", "0"])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and f"{closed_port_url}/chat/completions" in line
    assert "Connection refused after 1 attempt" in line and VoteStore(db).failures().empty


def _judge_cli(study, tmp_path, base_url: str, *extra: str) -> int:
    return main(["pairwise", "judge", "--pairs", str(study["pairs"]), "--db", str(tmp_path / "j.sqlite"),
                 "--out", str(tmp_path / "t.csv"), "--pool", "text_llm", "--mode", "text",
                 "--model", "m1", "--model", "m2", "--base-url", base_url,
                 "--api-key-env", "FAKE_KEY", *extra])


def _one_error_line(stderr: str) -> str:
    """The single ``clapcap: error:`` line of ``stderr`` (it must be the last line)."""
    errors = [line for line in stderr.splitlines() if line.startswith("clapcap: error: ")]
    assert len(errors) == 1 and stderr.splitlines()[-1] == errors[0], stderr
    return errors[0]


@pytest.mark.parametrize(("status", "from_dotenv"), [(401, False), (403, True)])
def test_refused_key_stops_the_judge_at_the_first_request(study, fake_api, tmp_path, monkeypatch,
                                                          capsys, status, from_dotenv):
    """A wrong key used to be tried on every item (2 models x 9 items = 18 requests, each
    billed on a paid API) and to end with exit 1 and no error line."""
    dotenv = tmp_path / ".env"
    if from_dotenv:
        monkeypatch.delenv("FAKE_KEY", raising=False)
        dotenv.write_text(f"FAKE_KEY={KEY}\n")
    else:
        monkeypatch.setenv("FAKE_KEY", KEY)
    fake_api.default = lambda _body: fake_api.error(status)
    rc = _judge_cli(study, tmp_path, fake_api.url, "--dotenv", str(dotenv))
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and len(fake_api.requests) == 1
    assert f"{fake_api.url}/chat/completions" in line and f"HTTP {status}" in line
    assert (f"FAKE_KEY in {dotenv}" if from_dotenv else "$FAKE_KEY") in line and KEY not in line
    store = VoteStore(tmp_path / "j.sqlite")  # not the items' fault: nothing recorded
    assert store.failures().empty and store.votes().empty


@pytest.mark.parametrize(("reply", "extra", "n_requests", "says"), [
    # The server takes the request and never answers within --timeout.
    ("slow", ["--timeout", "0.2", "--max-retries", "1"], 2, "no answer within 0.2 s"),
    # 200 but HTML (a proxy's page): retried like a dropped answer, then the run stops.
    (FakeOpenAI.raw(200, "<html>login</html>"), ["--max-retries", "0"], 1, "answer is not JSON"),
    # 200 but bytes that are not UTF-8: retried the same way, never a bare decode error (exit 2).
    (FakeOpenAI.raw(200, b"\xff\xfe"), ["--max-retries", "1"], 2, "answer is not UTF-8"),
    # JSON that is no chat completion, on every attempt of the first item.
    ((200, {"data": []}, {}), ["--max-answer-attempts", "2"], 2, "answer has no choices"),
])
def test_endpoint_failures_stop_the_judge_with_one_error_line(study, fake_api, tmp_path, monkeypatch,
                                                              capsys, reply, extra, n_requests, says):
    monkeypatch.setenv("FAKE_KEY", KEY)
    if reply == "slow":
        fake_api.delay_s = 1.0
    else:
        fake_api.default = lambda _body: reply
    rc = _judge_cli(study, tmp_path, fake_api.url, "--dotenv", "", *extra)
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and len(fake_api.requests) == n_requests
    assert f"{fake_api.url}/chat/completions" in line and says in line and KEY not in line
    assert VoteStore(tmp_path / "j.sqlite").failures().empty


def test_failed_judgements_end_with_one_error_line(study, fake_api, tmp_path, monkeypatch, capsys):
    """Unparseable judgements are the items' own failures: the run goes on, then says so."""
    monkeypatch.setenv("FAKE_KEY", KEY)
    fake_api.by_model["m1"] = [fake_api.chat("no idea")] * 3
    rc = _judge_cli(study, tmp_path, fake_api.url, "--dotenv", "")
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 1 and len(fake_api.requests) == 2 * 9 * 2 + 2  # models x items x orders, + 2 re-asks
    assert "judge pool text_llm: 1 judgement(s) failed" in line and fake_api.url in line
    assert "malformed answer after 3 attempts: 'no idea'" in line
    assert len(VoteStore(tmp_path / "j.sqlite").votes()) == 35


def test_each_model_of_a_pool_samples_with_its_own_seed(study, fake_api, tmp_path):
    """With both orders every rater sees the same prompts, so one seed would make a sampled
    pool's raters copies of each other: the k-th model asks with ``extra_body.seed + k``."""
    cfg = JudgeConfig(pool="sampled", models=["s1", "s2", "s3"], mode="text", base_url=fake_api.url,
                      env_file="", key_required=False, backoff_s=0.0, temperature=0.8,
                      extra_body={"seed": 5})
    run_judges(study["pairs"], tmp_path / "votes.sqlite", cfg)
    seeds = {(r["body"]["model"], r["body"]["seed"]) for r in fake_api.requests}
    assert seeds == {("s1", 5), ("s2", 6), ("s3", 7)}
    assert cfg.extra_body == {"seed": 5}  # the config itself is left as it was
