"""LLM paraphrasing under ``kill -9``: no paid call is repeated, a torn cache line is redone.

``clapcap robust paraphrase`` (LLM backend, one worker) runs in a subprocess against the
fake OpenAI server. The fake answers ``K`` calls, then holds call ``K + 1`` while the test
SIGKILLs the process; a record cut mid-write is then simulated by a torn last line (half
a UTF-8 character at the end). The rerun must finish without asking any call already
answered, and a third run must ask nothing at all (the torn line did not swallow the
record appended after it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import yaml

import clapcap

K = 4


def _paraphrase(params: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(clapcap.__file__).parents[1])}
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from clapcap.cli import main; sys.exit(main())",
         "robust", "paraphrase", "--params", str(params), "--backend", "llm"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _call(body: dict) -> str:
    """What makes a call distinct (and what the cache key hashes): the prompt and temperature."""
    return json.dumps([body["messages"], body["temperature"]], sort_keys=True)


def test_sigkill_mid_run_repeats_no_paid_call(tiny_corpus, fake_llm, tmp_path):
    cache = tmp_path / "llm_cache.jsonl"
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"robust_paraphrase": {
        "dataset_dir": str(tiny_corpus), "out_dir": str(tmp_path / "out"), "max_clips": 2,
        "track": False, "llm": {"base_url": fake_llm.url, "model": "fake-model", "env_file": "",
                                "backoff_s": 0.0, "workers": 1, "cache_path": str(cache)}}}))
    held, release = threading.Event(), threading.Event()

    def hold(body: dict):
        held.set()
        release.wait(30)
        return fake_llm.default(body)

    base = fake_llm.default

    def answer(body: dict):  # non-ASCII text, as real models write
        _, payload, _ = base(body)
        return fake_llm.chat(payload["choices"][0]["message"]["content"].replace("Heard here", "Entendu là"))

    fake_llm.default = answer
    fake_llm.script = [fake_llm.default] * K + [hold]
    proc = _paraphrase(params)
    try:
        assert held.wait(90), proc.stderr.read() if proc.poll() is not None else "no request"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        release.set()
    first = [_call(r["body"]) for r in fake_llm.requests]
    answered, in_flight = set(first[:K]), first[K]
    data = cache.read_bytes()
    assert len(data.splitlines()) == K  # every answered call was on disk before the next was sent
    cut = data.rindex("à".encode()) + 1
    assert cut > len(data) - len(data.splitlines()[-1])
    cache.write_bytes(data[:cut])  # the last record, cut mid-write inside "à"

    n_before = len(fake_llm.requests)
    rerun = _paraphrase(params)
    assert rerun.wait(120) == 0, rerun.stderr.read()
    second = [_call(r["body"]) for r in fake_llm.requests[n_before:]]
    repeated = answered & set(second)
    assert repeated == {first[K - 1]}, f"{len(repeated)} paid call(s) repeated"  # the torn one only
    assert in_flight in second and len(second) == len(set(second))
    assert (tmp_path / "out" / "manifest.csv").is_file()

    n_before = len(fake_llm.requests)
    third = _paraphrase(params)
    assert third.wait(120) == 0, third.stderr.read()
    assert len(fake_llm.requests) == n_before  # everything is cached, nothing swallowed
    records = [json.loads(x) for x in cache.read_bytes().splitlines()]
    assert len(records) == len({r["key"] for r in records}) == K - 1 + len(second)  # the torn one cut off


def test_torn_cache_line_does_not_swallow_the_next_record(tmp_path):
    from clapcap.paraphrase.llm import open_cache

    path = tmp_path / "c.jsonl"
    open_cache(path).put({"key": "a", "status": "ok"})
    with path.open("ab") as fh:
        fh.write(b'{"key": "b", "status": "o')  # cut by a crash
    resumed = open_cache(path)
    assert len(resumed) == 1 and resumed.get("b") is None  # "b" will be asked again
    resumed.put({"key": "c", "status": "ok"})
    again = open_cache(path)  # the old cache glued "c" onto the fragment and lost it
    assert again.get("a") and again.get("c") and len(again) == 2
