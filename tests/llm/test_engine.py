"""The LLM engine's lifecycle (clapcap.llm.engine): clear errors without it; with it (marked
``engine``: make test-engine, run in .ci/run), a real llama.cpp server on 127.0.0.1 that
clapcap's client talks to, stopped by its PID also when the block fails."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from clapcap.llm.engine import EngineConfig, EngineError, model_path, served

ROOT = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = os.environ.get("CLAPCAP_ENGINE_PYTHON", str(ROOT / ".engine" / "bin" / "python"))


def test_kind_none_starts_nothing():
    with served(EngineConfig(kind="none"), "http://example.invalid/v1") as url:
        assert url == "http://example.invalid/v1"


def test_missing_engine_names_make_engine(tmp_path):
    cfg = EngineConfig(kind="llama_cpp", python=str(tmp_path / "nope" / "python"))
    with pytest.raises(EngineError, match="make engine"):
        with served(cfg):
            pass


def test_engine_without_the_server_module_is_refused():
    with pytest.raises(EngineError, match="cannot import llama_cpp.server"):
        with served(EngineConfig(kind="llama_cpp", python=sys.executable)):
            pass


def test_missing_model_file(tmp_path):
    with pytest.raises(EngineError, match="no GGUF file"):
        model_path(str(tmp_path / "m.gguf"))
    assert model_path(EngineConfig().model).name == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_bad_values_rejected():
    with pytest.raises(ValueError, match="n_threads"):
        EngineConfig(n_threads=0)


def test_server_that_exits_is_reported_with_its_log(tmp_path):
    """A 'server' that dies at once: one EngineError with the log's last lines, no hang."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = -c ]; then exit 0; fi\necho 'model load failed: bad magic' >&2\nexit 3\n")
    fake.chmod(0o755)
    cfg = EngineConfig(kind="llama_cpp", python=str(fake), log_path=str(tmp_path / "server.log"), startup_timeout_s=30)
    with pytest.raises(EngineError, match=r"(?s)exited with status 3.*bad magic"):
        with served(cfg):
            pass


FAKE_SERVER = """
import http.server, os, signal, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"data": []}')
    def do_POST(self):
        print("ggml_compute: illegal tile state", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def crashing_engine(tmp_path) -> EngineConfig:
    """An engine whose 'python' runs FAKE_SERVER instead of llama.cpp."""
    (tmp_path / "server.py").write_text(FAKE_SERVER)
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nif [ \"$1\" = -c ]; then exit 0; fi\nexec {sys.executable} {tmp_path / 'server.py'} \"$@\"\n")
    fake.chmod(0o755)
    return EngineConfig(kind="llama_cpp", python=str(fake), log_path=str(tmp_path / "server.log"), startup_timeout_s=30)


def test_server_that_crashes_while_serving_is_named(crashing_engine):
    """A 'server' that answers /v1/models and segfaults on the first completion (as a llama.cpp
    built for another CPU did): the client's connection error becomes one EngineError naming
    the signal and the log, not a bare 'endpoint unreachable'."""
    from clapcap.llm.config import EndpointConfig
    from clapcap.llm.errors import LLMError

    with pytest.raises(EngineError, match=r"(?s)died while serving.*SIGSEGV.*make engine.*illegal tile state") as err:
        with served(crashing_engine) as url:
            client = EndpointConfig(base_url=url, env_file="", max_retries=0).client(crashing_engine.alias,
                                                                                     key_required=False)
            client.complete([{"role": "user", "content": "hi"}], max_tokens=4)
    assert isinstance(err.value.__cause__, LLMError)


def test_an_error_with_the_server_alive_passes_through(crashing_engine):
    with pytest.raises(RuntimeError, match="planted"):
        with served(crashing_engine):
            raise RuntimeError("planted")


@pytest.mark.engine
def test_real_server_answers_through_the_client_and_stops(tmp_path):
    import psutil

    from clapcap.llm.config import EndpointConfig

    cfg = EngineConfig(kind="llama_cpp", python=ENGINE_PYTHON, log_path=str(tmp_path / "server.log"))
    pids = []
    with pytest.raises(RuntimeError, match="planted"):
        with served(cfg) as url:
            assert url.startswith("http://127.0.0.1:")
            client = EndpointConfig(base_url=url, env_file="").client(cfg.alias, key_required=False)
            text = client.complete([{"role": "user", "content": "Say the word: bell."}], temperature=0.0,
                                   max_tokens=8)
            assert isinstance(text, str) and text.strip()
            port = url.rsplit(":", 1)[1].split("/")[0]
            pids = [p.pid for p in psutil.process_iter(["cmdline"])
                    if {"llama_cpp.server", port} <= set(p.info["cmdline"] or [])]
            assert len(pids) == 1
            raise RuntimeError("planted")
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"server still running: {alive}"


@pytest.mark.engine
def test_real_llm_views_end_to_end(tiny_corpus, tmp_path):
    """The robust_paraphrase_llm step on one clip of the tiny corpus with the real engine: every
    caption gets both views recorded (accepted, corrected or dropped with a reason), the rates
    add up, and a rerun asks nothing again (the call cache holds every answer)."""
    import json

    from clapcap.config import from_dict
    from clapcap.paraphrase.dataset import ParaphraseParams, paraphrase_dataset

    def params(out: str) -> ParaphraseParams:
        return from_dict(ParaphraseParams, {
            "backend": "llm", "dataset_dir": str(tiny_corpus), "out_dir": str(tmp_path / out), "splits": ["test"],
            "max_clips": 1, "heldout_splits": [], "track": False,
            "llm": {"engine": {"kind": "llama_cpp", "python": ENGINE_PYTHON, "log_path": str(tmp_path / "e.log")},
                    "base_url": "", "model": "smollm2-135m-instruct", "env_file": "", "max_tokens": 96,
                    "workers": 1, "max_retries": 1, "cache_path": str(tmp_path / "cache.jsonl"),
                    "extra_body": {"seed": 0}}})

    report = paraphrase_dataset(params("a"), progress=False)
    records = json.loads((tmp_path / "a" / "view_records.json").read_text())
    n = report["n_captions"]
    assert n >= 1 and len(records) == 2 * n
    assert {r["status"] for r in records} <= {"accepted", "corrected", "dropped"}
    assert all(r["reason"] for r in records if r["status"] == "dropped")
    acc = report["acceptance"]["all"]
    assert acc["accepted"] + acc["corrected"] + acc["dropped"] == 2 * n
    lines = (tmp_path / "cache.jsonl").read_text().splitlines()
    again = paraphrase_dataset(params("b"), progress=False)
    assert (tmp_path / "cache.jsonl").read_text().splitlines() == lines  # no new call
    assert again["acceptance"] == report["acceptance"]
