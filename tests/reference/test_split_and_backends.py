"""Shared split dump, import backend, OpenAI-compatible API backend, progress cache and resume."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pandas as pd
import pytest

from clapcap.evaluation.shared_split import read_split, read_split_json
from clapcap.reference.api import ApiCaptioner, ApiError
from clapcap.reference.config import ApiConfig, GenerationConfig, ReferenceSpec
from clapcap.reference.generate import generate_reference, progress_cache
from clapcap.utils.io import read_json, write_json

SECRET = "sk-test-SECRET-123"


def test_dump_split_csv_and_json(small_split, tiny_corpus):
    from clapcap.data.prepare import load_dataset

    csv_path, json_path = small_split
    test = load_dataset(tiny_corpus).split("test")
    df = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    assert list(df.columns) == ["clip_id", "audio_path", "caption", "is_audioset_eval"]
    assert len(df) == sum(len(c) for c in test["captions"])
    split = read_split(csv_path)
    assert [c.clip_id for c in split.clips] == list(test["clip_id"])
    assert split.references == dict(zip(test["clip_id"], test["captions"], strict=True))
    flags = {c: f for c, f in zip(test["clip_id"], test["is_audioset_eval"], strict=True)}
    assert split.flags == flags
    assert read_split_json(json_path).references == split.references
    assert all(Path(c.audio_path).is_file() for c in read_split_json(json_path).clips)


def test_dump_split_writes_no_absolute_path(tmp_path, tiny_corpus, monkeypatch):
    """split.csv/split.json name audio relative to their folder: bytes independent of where the
    repository lies, and still usable from any working directory."""
    from clapcap.evaluation.shared_split import dump_split

    csv_path, json_path = dump_split(tiny_corpus, tmp_path / "split")
    for path in (csv_path, json_path):
        assert str(tmp_path) not in path.read_text() and str(Path(tiny_corpus).resolve()) not in path.read_text()
    monkeypatch.chdir(tmp_path.parent)
    clips = read_split_json(json_path).clips
    assert all(Path(c.audio_path).is_absolute() and Path(c.audio_path).is_file() for c in clips)


def test_dump_split_carries_is_audioset_eval(tmp_path, tiny_corpus):
    from clapcap.evaluation.shared_split import dump_split

    csv_path, _ = dump_split(tiny_corpus, tmp_path, split="train")
    flags = set(read_split(csv_path).flags.values())
    assert None in flags and flags & {True, False}  # music clips flagged, others empty


def test_import_backend(tmp_path, small_split):
    split = read_split_json(small_split[1])
    src = tmp_path / "elsewhere.json"
    write_json(src, [{"clip_id": c.clip_id, "caption": "music plays"} for c in split.clips])
    spec = ReferenceSpec(name="ext", backend="import", predictions_file=str(src))
    out = generate_reference(spec, small_split[1], tmp_path / "out")
    assert read_json(out) == {c.clip_id: "music plays" for c in split.clips}
    write_json(src, {split.clips[0].clip_id: "x", "ghost": "y"})
    with pytest.raises(ValueError, match="ghost"):
        generate_reference(ReferenceSpec(name="ext2", backend="import", predictions_file=str(src)),
                           small_split[1], tmp_path / "out")


def _api_spec(base_url: str, **api) -> ReferenceSpec:
    return ReferenceSpec(name="api_model", backend="openai_api",
                         api=ApiConfig(base_url=base_url, model="fake-omni", api_key_env="FAKE_KEY",
                                       backoff_s=0.0, **api),
                         generation=GenerationConfig(prompt="Describe the music."))


def test_api_backend_against_fake_server(tmp_path, small_split, fake_openai, monkeypatch, caplog):
    monkeypatch.delenv("FAKE_KEY", raising=False)
    env_file = tmp_path / ".env"
    env_file.write_text(f"FAKE_KEY={SECRET}\n")
    fake_openai.fail_first = [429, 503]   # rate limited, then a server error: both retried
    spec = _api_spec(fake_openai.base_url, env_file=str(env_file))
    with caplog.at_level(logging.DEBUG):
        out = generate_reference(spec, small_split[1], tmp_path / "out", progress=False)
    split = read_split_json(small_split[1])
    preds = read_json(out)
    assert list(preds) == [c.clip_id for c in split.clips]
    assert all(p.startswith("a caption number") for p in preds.values())
    reqs = fake_openai.requests
    assert len(reqs) == len(split.clips) + 2
    first = reqs[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == f"Bearer {SECRET}"
    body = first["body"]
    assert body["max_tokens"] == 128 and body["temperature"] == 0 and body["model"] == "fake-omni"
    audio = body["messages"][0]["content"][0]["input_audio"]
    assert audio["format"] == "wav"
    assert base64.b64decode(audio["data"]) == Path(split.clips[0].audio_path).read_bytes()
    assert body["messages"][0]["content"][1] == {"type": "text", "text": "Describe the music."}
    assert "retry" in caplog.text and SECRET not in caplog.text
    assert SECRET not in repr(ApiCaptioner(spec.api, spec.generation))


def test_api_streaming_and_data_uri(tmp_path, fake_openai, small_split, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", SECRET)
    spec = _api_spec(fake_openai.base_url, stream=True, audio_encoding="data_uri")
    api = ApiCaptioner(spec.api, spec.generation)
    clip = read_split_json(small_split[1]).clips[0]
    assert api.caption(clip.audio_path) == "a caption number 1."
    body = fake_openai.requests[0]["body"]
    assert body["stream"] is True
    assert body["messages"][0]["content"][0]["input_audio"]["data"].startswith("data:;base64,")


def test_api_gives_up_and_never_leaks_key(tmp_path, fake_openai, small_split, monkeypatch):
    monkeypatch.setenv("FAKE_KEY", SECRET)
    clip = read_split_json(small_split[1]).clips[0]
    fake_openai.fail_first = [429] * 3
    api = ApiCaptioner(_api_spec(fake_openai.base_url, max_retries=2).api, GenerationConfig())
    with pytest.raises(ApiError, match="after 2 retries") as err:
        api.caption(clip.audio_path)
    assert SECRET not in str(err.value)
    fake_openai.fail_first = [401]
    with pytest.raises(ApiError, match="HTTP 401"):
        api.caption(clip.audio_path)
    monkeypatch.delenv("FAKE_KEY")
    with pytest.raises(ApiError, match="set FAKE_KEY"):
        ApiCaptioner(_api_spec(fake_openai.base_url, env_file=str(tmp_path / "none")).api, GenerationConfig())


def test_interrupted_run_resumes_from_progress_cache(tmp_path, small_split):
    split = read_split_json(small_split[1])
    spec = ReferenceSpec(name="flaky", backend="openai_api")
    calls: list[str] = []

    def flaky(paths):
        if len(calls) == 3:
            raise ConnectionError("rate limited for the day")
        calls.extend(paths)
        return [f"caption of {Path(p).stem}" for p in paths]

    with pytest.raises(ConnectionError):
        generate_reference(spec, small_split[1], tmp_path, captioner=flaky, progress=False)
    cache_file = tmp_path / "flaky" / "progress.jsonl"
    assert len(progress_cache(cache_file)) == 3
    with cache_file.open("a") as fh:
        fh.write('{"clip_id": "trunc')   # a write cut by a crash
    seen: list[str] = []

    def counting(paths):
        seen.extend(paths)
        return [f"caption of {Path(p).stem}" for p in paths]

    out = generate_reference(spec, small_split[1], tmp_path, captioner=counting, progress=False)
    assert len(seen) == len(split.clips) - 3 and not set(seen) & set(calls)
    assert len(read_json(out)) == len(split.clips)
    lines = [json.loads(x) for x in cache_file.read_text().splitlines() if x.startswith('{"clip_id": "')
             and x.endswith("}")]
    assert len(lines) == len(split.clips)
    # Finished: a rerun skips by the predictions file.
    generate_reference(spec, small_split[1], tmp_path, captioner=lambda p: pytest.fail("reran"))


def test_api_dead_endpoint_stops_with_one_error(tmp_path, small_split, closed_port_url, monkeypatch):
    from clapcap.llm import EndpointUnreachable

    monkeypatch.setenv("FAKE_KEY", SECRET)
    spec = _api_spec(closed_port_url, max_retries=10)
    with pytest.raises(EndpointUnreachable, match="3 consecutive connection failures") as err:
        generate_reference(spec, small_split[1], tmp_path / "out", progress=False)
    assert closed_port_url in str(err.value) and SECRET not in str(err.value)
    assert not (tmp_path / "out" / "api_model" / "predictions.json").exists()
