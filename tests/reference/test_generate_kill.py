"""Reference captioning through an API under ``kill -9``: no paid call is repeated.

``clapcap reference generate`` runs in a subprocess against a fake OpenAI server. The
fake answers ``K`` clips, then holds request ``K + 1`` while the test SIGKILLs the process.

- At the kill, all ``K`` answered clips are in the progress cache: a rerun repeats none.
- Then the last record is cut inside a UTF-8 character, as if the kill had landed while
  it was being appended. The rerun must finish, redo that clip (answered but not recorded: the only
  repeat possible) and the in-flight one, and send no request for any other cached clip.
"""

from __future__ import annotations

import base64
import hashlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import yaml

import clapcap
from clapcap.evaluation.shared_split import read_split_json
from clapcap.reference.generate import progress_cache
from clapcap.utils.io import read_json

K = 5


def _generate(params: Path, split_json: Path, out_dir: Path, base_url: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(clapcap.__file__).parents[1]), "FAKE_KEY": "sk-fake"}
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from clapcap.cli import main; sys.exit(main())",
         "reference", "generate", "--name", "api_model", "--params", str(params),
         "--split-json", str(split_json), "--out-dir", str(out_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _clip_of(body: dict, by_audio: dict[str, str]) -> str:
    data = body["messages"][0]["content"][0]["input_audio"]["data"]
    return by_audio[hashlib.sha256(base64.b64decode(data)).hexdigest()]


def test_sigkill_mid_run_repeats_no_paid_call(tmp_path, small_split, fake_openai):
    split = read_split_json(small_split[1])
    by_audio = {hashlib.sha256(Path(c.audio_path).read_bytes()).hexdigest(): c.clip_id for c in split.clips}
    assert len(by_audio) == len(split.clips) > K + 1
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"reference": {"references": [{
        "name": "api_model", "backend": "openai_api",
        "api": {"base_url": fake_openai.base_url, "model": "fake-omni", "api_key_env": "FAKE_KEY",
                "env_file": "", "backoff_s": 0.0},
        "generation": {"batch_size": 4}}]}}))  # API answers are still recorded one by one
    out = tmp_path / "out"
    held, release = threading.Event(), threading.Event()

    def hold(n: int, body: dict) -> None:
        if n == K + 1:  # the (K+1)-th call is in flight when the process dies
            held.set()
            release.wait(30)

    fake_openai.on_request = hold
    fake_openai.caption = "un café numéro {n}."
    proc = _generate(params, small_split[1], out, fake_openai.base_url)
    try:
        assert held.wait(60), proc.stderr.read() if proc.poll() is not None else "no request"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        release.set()
    fake_openai.on_request = None
    first = [_clip_of(r["body"], by_audio) for r in fake_openai.requests]
    answered, in_flight = first[:K], first[K]
    cache_file = out / "api_model" / "progress.jsonl"
    assert set(progress_cache(cache_file)) == set(answered)  # each answer on disk before the next call
    assert not (out / "api_model" / "predictions.json").exists()
    data = cache_file.read_bytes()
    cut = data.rindex("é".encode()) + 1
    assert cut > len(data) - len(data.splitlines()[-1])
    cache_file.write_bytes(data[:cut])  # the last record, cut mid-write inside "é"
    torn = answered[-1]
    cached = set(answered[:-1])

    n_before = len(fake_openai.requests)
    rerun = _generate(params, small_split[1], out, fake_openai.base_url)
    assert rerun.wait(120) == 0, rerun.stderr.read()
    second = [_clip_of(r["body"], by_audio) for r in fake_openai.requests[n_before:]]
    repeated = sorted(set(second) & set(answered))
    assert repeated == [torn], f"paid calls repeated: {repeated}"  # only the one cut mid-write
    assert sorted(second) == sorted(c.clip_id for c in split.clips if c.clip_id not in cached)
    assert in_flight in second
    preds = read_json(out / "api_model" / "predictions.json")
    assert list(preds) == [c.clip_id for c in split.clips]
    assert set(progress_cache(cache_file)) == set(preds)
    assert len(cache_file.read_bytes().splitlines()) == len(preds)  # no fragment left behind
