"""The reference flow under Prefect's test harness: tasks, retries, the API concurrency limit."""

from __future__ import annotations

import pytest


@pytest.fixture
def prefect_env(prefect_env, tmp_path, monkeypatch):
    """The shared harness (tests/flows/conftest.py) plus a private aac-metrics cache."""
    monkeypatch.setenv("CLAPCAP_AAC_CACHE", str(tmp_path / "aac"))
    yield


def test_reference_flow_runs_retries_and_limits_api(tmp_path, tiny_corpus, prefect_env, fake_openai,
                                                    monkeypatch):
    from clapcap.data.prepare import load_dataset
    from clapcap.flows.reference import reference_flow
    from clapcap.reference.config import (
        ApiConfig,
        GenerationConfig,
        ReferenceParams,
        ReferenceSpec,
    )
    from clapcap.utils.io import read_json, write_json

    monkeypatch.setenv("FAKE_KEY", "sk-flow")
    fake_openai.delay_s = 0.05
    fake_openai.fail_first = [401]  # the first API request fails: its Prefect task is retried
    api = ApiConfig(base_url=fake_openai.base_url, model="m", api_key_env="FAKE_KEY", max_retries=0)
    specs = [ReferenceSpec(name=f"api{i}", backend="openai_api", api=api,
                           generation=GenerationConfig(max_new_tokens=16)) for i in range(2)]
    test_ids = load_dataset(tiny_corpus).split("test")["clip_id"]
    ext = tmp_path / "ext.json"
    write_json(ext, {c: "a sound" for c in test_ids})
    specs.append(ReferenceSpec(name="ext", backend="import", predictions_file=str(ext)))
    params = ReferenceParams(dataset_dir=str(tiny_corpus), split_dir=str(tmp_path / "split"),
                             out_dir=str(tmp_path / "out"), metrics=["cider_d", "bleu_1"],
                             api_concurrency=1, task_retries=2, task_retry_delay_s=0.0,
                             references=specs)
    out = reference_flow(params)
    assert set(out) == {"api0", "api1", "ext"}
    for path in out.values():
        scores = read_json(path)
        assert scores["primary"] == "cider_d" and scores["n_clips"] == len(test_ids)
        assert scores["leakage"]["verdict"] in ("clean", "inconclusive", "leaky")
    assert fake_openai.max_active == 1
    assert len(fake_openai.requests) == 2 * len(test_ids) + 1
    before = len(fake_openai.requests)
    assert reference_flow(params) == out   # finished references are skipped by their scores file
    assert len(fake_openai.requests) == before
