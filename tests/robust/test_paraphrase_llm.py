"""The LLM paraphrase backend against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest

from clapcap.llm.errors import LLMError
from clapcap.llm.secrets import SecretStr, resolve_api_key
from clapcap.paraphrase.llm import LLMParams, LLMParaphraser, build_client, open_cache
from clapcap.paraphrase.prompts import MalformedAnswer, parse_correction, parse_generation

SECRET = "sk-test-DO-NOT-LEAK-4242"


def _params(fake, tmp_path, **kw) -> LLMParams:
    base = dict(base_url=fake.url, model="fake-model", backoff_s=0.0, max_backoff_s=0.0,
                env_file=str(tmp_path / "missing.env"), cache_path=str(tmp_path / "cache.jsonl"),
                workers=1)
    return LLMParams(**{**base, **kw})


def _paraphraser(params: LLMParams) -> LLMParaphraser:
    return LLMParaphraser(params, client=build_client(params), cache=open_cache(params.cache_path))


def test_two_steps_generate_then_correct(fake_llm, tmp_path):
    res = _paraphraser(_params(fake_llm, tmp_path)).paraphrase("A metallic clank echoes twice.")
    assert len(fake_llm.requests) == 3  # generation + one correction per view
    assert fake_llm.requests[0]["body"]["messages"][-1]["content"] == "Caption: A metallic clank echoes twice."
    assert len(fake_llm.requests[0]["body"]["messages"]) > 3  # in-context examples are sent
    assert res.views["view1"] == "Heard here: a metallic clank echoes twice."
    assert res.rewritten == {"view1": False, "view2": True}
    assert "clang of metal" in res.views["view2"] and "collision" not in res.views["view2"]


def test_correction_can_be_disabled(fake_llm, tmp_path):
    res = _paraphraser(_params(fake_llm, tmp_path, correction=False)).paraphrase("A metallic clank.")
    assert len(fake_llm.requests) == 1 and "collision" in res.views["view2"]


def test_cache_resumes_without_paying_twice(fake_llm, tmp_path):
    params = _params(fake_llm, tmp_path)
    caps = ["A dog barks.", "A bell rings twice.", "A dog barks."]
    # The 4th request dies with a non-retryable status: the run stops mid-way.
    fake_llm.script = [fake_llm.default] * 3 + [(401, {"error": "unauthorised"}, {})]
    with pytest.raises(LLMError, match="HTTP 401"):
        _paraphraser(params).paraphrase_many(caps)
    assert len(fake_llm.requests) == 4
    first = _paraphraser(params).paraphrase_many(caps)  # resumes: 1 caption left, 3 calls
    assert len(fake_llm.requests) == 7
    again = _paraphraser(params).paraphrase_many(caps)  # everything cached
    assert len(fake_llm.requests) == 7
    assert {c: r.views for c, r in first.items()} == {c: r.views for c, r in again.items()}
    lines = [json.loads(x) for x in (tmp_path / "cache.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and all(rec["model"] == "fake-model" for rec in lines)


def test_rate_limits_and_transient_errors_are_retried(fake_llm, tmp_path):
    fake_llm.script = [(429, {"error": "slow down"}, {"Retry-After": "0"}),
                       (503, {"error": "busy"}, {}), (200, "not json at all", {})]
    res = _paraphraser(_params(fake_llm, tmp_path)).paraphrase("A dog barks.")
    assert len(fake_llm.requests) == 6 and res.views["view1"] and not res.errors


def test_retries_are_bounded(fake_llm, tmp_path):
    fake_llm.script = [(429, {"error": "slow down"}, {})] * 10
    with pytest.raises(LLMError, match="HTTP 429 after 3 attempt"):
        _paraphraser(_params(fake_llm, tmp_path, max_retries=2)).paraphrase("A dog barks.")
    assert len(fake_llm.requests) == 3
    assert not (tmp_path / "cache.jsonl").exists()  # nothing recorded: a rerun asks again


def test_malformed_answer_retried_then_recorded_as_failed(fake_llm, tmp_path):
    bad = fake_llm.chat("Sure! Here are your paraphrases: view1 is nice.")
    fake_llm.script = [bad] * 3
    params = _params(fake_llm, tmp_path, malformed_retries=2)
    res = _paraphraser(params).paraphrase("A dog barks.")
    assert len(fake_llm.requests) == 3
    assert res.views == {"view1": None, "view2": None} and "no JSON object" in res.errors["view1"]
    rec = json.loads((tmp_path / "cache.jsonl").read_text())
    assert rec["status"] == "failed" and rec["value"] is None
    _paraphraser(params).paraphrase("A dog barks.")  # recorded failure is not re-asked ...
    assert len(fake_llm.requests) == 3
    ok = _paraphraser(LLMParams(**{**params.__dict__, "retry_failed": True})).paraphrase("A dog barks.")
    assert ok.views["view1"] and len(fake_llm.requests) == 6  # ... unless retry_failed


def test_malformed_then_good_answer(fake_llm, tmp_path):
    fake_llm.script = [fake_llm.chat('{"view1": "A dog barks."}')]  # missing view2 and a copy
    res = _paraphraser(_params(fake_llm, tmp_path)).paraphrase("A dog barks.")
    assert len(fake_llm.requests) == 4 and res.views["view2"]


def test_parsers_refuse_bad_answers():
    cap = "A dog barks."
    assert parse_generation('```json\n{"view1": "Barks a dog.", "view2": "A hound yaps."}\n```', cap) \
        == {"view1": "Barks a dog.", "view2": "A hound yaps."}
    for bad in ['{"view1": "", "view2": "x y"}', '{"view1": "a dog barks", "view2": "x y"}',
                '["Barks a dog.", "A hound yaps."]', '{"view1": 3, "view2": "x"}',
                '{"view1": "' + "long " * 100 + '", "view2": "x"}']:
        with pytest.raises(MalformedAnswer):
            parse_generation(bad, cap)
    with pytest.raises(MalformedAnswer, match="verdict"):
        parse_correction('{"verdict": "maybe"}', cap, "Barks a dog.")
    assert parse_correction('{"verdict": "keep"}', cap, "Barks a dog.") == ("Barks a dog.", False, [])


def test_key_never_logged_or_sent_to_mlflow(fake_llm, tmp_path, monkeypatch, caplog, mlflow_uri):
    import mlflow

    from clapcap.paraphrase.dataset import ParaphraseParams
    from clapcap.tracked.paraphrase import run_paraphrase

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    fake_llm.script = [(400, {"error": "bad", "echo": f"Bearer {SECRET}"}, {})]
    params = _params(fake_llm, tmp_path)
    with pytest.raises(LLMError) as info:
        _paraphraser(params).paraphrase("A dog barks.")
    assert SECRET not in str(info.value) and "HTTP 400" in str(info.value)
    assert repr(SecretStr(SECRET)) == str(SecretStr(SECRET)) and SECRET not in repr(SecretStr(SECRET))
    assert fake_llm.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"  # the key is used
    pp = ParaphraseParams(backend="llm", dataset_dir=str(_tiny(tmp_path)), out_dir=str(tmp_path / "out"),
                          max_clips=2, llm=params, experiment="test-robust")
    report = run_paraphrase(pp, progress=False)
    assert report["n_failed_views"] == 0 and report["n_views"]["view2"] == report["n_captions"]
    client = mlflow.MlflowClient(mlflow_uri)
    (run,) = client.search_runs([client.get_experiment_by_name("test-robust").experiment_id])
    logged = run.data.params
    assert run.data.metrics["data/view2/n_captions"] == report["n_captions"]
    assert logged["llm/base_url"] == fake_llm.url
    assert all(SECRET not in v for v in logged.values())
    assert SECRET not in caplog.text
    for f in tmp_path.rglob("*"):
        if f.is_file() and f.suffix in (".jsonl", ".json", ".csv"):
            assert SECRET not in f.read_text(), f


def _tiny(tmp_path):
    """A 3-clip dataset folder in the manifest format."""
    import pandas as pd

    from clapcap.data.manifest import write_manifest
    from clapcap.utils.io import write_json

    rows = [{"clip_id": f"c{i}", "audio_path": f"a/c{i}.wav", "duration_s": 1.0, "sample_rate": 16000,
             "split": "test", "source": "synthetic", "captions": [f"A metallic clank {i} times.", "A dog barks."],
             "is_audioset_eval": None} for i in range(3)]
    out = tmp_path / "ds"
    write_manifest(pd.DataFrame(rows), out / "manifest.csv")
    write_json(out / "dataset.json", {"root": "."})
    return out


def test_env_file_key(tmp_path, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    assert resolve_api_key("MY_KEY", tmp_path / "none.env") is None
    env = tmp_path / ".env"
    env.write_text(f"# comment\nexport MY_KEY='{SECRET}'\nOTHER=1\n")
    key = resolve_api_key("MY_KEY", env)
    assert key is not None and key.get() == SECRET and SECRET not in f"{key} {key!r}"
    monkeypatch.setenv("MY_KEY", "from-env")
    assert resolve_api_key("MY_KEY", env).get() == "from-env"


def test_failed_view_written_as_null(fake_llm, tmp_path):
    from clapcap.data.prepare import load_dataset
    from clapcap.paraphrase.dataset import ParaphraseParams, paraphrase_dataset

    fake_llm.script = [fake_llm.chat("no idea")] * 3  # the first caption's generation fails
    pp = ParaphraseParams(backend="llm", dataset_dir=str(_tiny(tmp_path)), out_dir=str(tmp_path / "out"),
                          max_clips=1, llm=_params(fake_llm, tmp_path))
    report = paraphrase_dataset(pp, progress=False)
    assert report["n_failed_views"] == 2 and report["n_views"] == {"view1": 1, "view2": 1}
    df = load_dataset(tmp_path / "out").manifest
    assert df["paraphrases_v1"][0][0] is None and isinstance(df["paraphrases_v1"][0][1], str)


def test_run_with_no_usable_output_exits_non_zero(fake_llm, tmp_path, capsys):
    """Every answer malformed: the run used to write an all-null manifest and exit 0."""
    import yaml

    from clapcap.cli import main
    from clapcap.paraphrase.dataset import ParaphraseParams, paraphrase_dataset

    fake_llm.default = lambda body: fake_llm.chat("Sorry, I cannot help with that.")
    llm = _params(fake_llm, tmp_path, malformed_retries=0)
    pp = ParaphraseParams(backend="llm", dataset_dir=str(_tiny(tmp_path)), out_dir=str(tmp_path / "out"),
                          max_clips=2, llm=llm, track=False)
    # 2 clips x 2 captions, "A dog barks." twice: 3 unique captions, 6 views, all failed.
    with pytest.raises(LLMError, match="no usable output: all 6 views of 3 unique caption") as err:
        paraphrase_dataset(pp, progress=False)
    assert "retry_failed" in str(err.value) and "no JSON object" in str(err.value)
    assert not (tmp_path / "out" / "manifest.csv").exists()
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"robust_paraphrase": {
        "backend": "llm", "dataset_dir": pp.dataset_dir, "out_dir": pp.out_dir, "max_clips": 2,
        "track": False, "llm": dataclasses.asdict(llm)}}))
    assert main(["robust", "paraphrase", "--params", str(params)]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith("clapcap: error: paraphrase: no usable output")


def test_dead_endpoint_stops_paraphrasing_once(closed_port_url, tmp_path):
    params = LLMParams(base_url=closed_port_url, model="m", backoff_s=0.0, max_backoff_s=0.0,
                       env_file="", cache_path=str(tmp_path / "cache.jsonl"), workers=4)
    paraphraser = _paraphraser(params)
    with pytest.raises(LLMError, match=r"endpoint unreachable: \d consecutive") as err:
        paraphraser.paraphrase_many([f"A dog barks {i} times." for i in range(40)])
    assert type(err.value).__name__ == "EndpointUnreachable" and closed_port_url in str(err.value)
    # No caption starts after the stop: a few attempts, not 40 captions x 6 attempts.
    assert paraphraser.client.n_requests <= 2 + 2 * params.workers
    assert not (tmp_path / "cache.jsonl").exists()


def _two_splits(tmp_path):
    """4 train clips and 3 test clips, three distinct captions each."""
    import pandas as pd

    from clapcap.data.manifest import write_manifest
    from clapcap.utils.io import write_json

    rows = [{"clip_id": f"{split}{i}", "audio_path": f"a/{split}{i}.wav", "duration_s": 1.0, "sample_rate": 16000,
             "split": split, "source": "synthetic", "is_audioset_eval": None,
             "captions": [f"A metallic clank {split} {i} {k}." for k in range(3)]}
            for split, n in (("train", 4), ("test", 3)) for i in range(n)]
    out = tmp_path / "ds2"
    write_manifest(pd.DataFrame(rows), out / "manifest.csv")
    write_json(out / "dataset.json", {"root": "."})
    return out


def test_subset_per_split_paraphrases_only_the_chosen_captions(fake_llm, tmp_path):
    """max_clips and captions_per_clip per split: the first 2 train clips with their first
    caption, every test clip with all its captions; the report says which, with each split's
    acceptance rates."""
    from clapcap.data.prepare import load_dataset
    from clapcap.paraphrase.dataset import ParaphraseParams, paraphrase_dataset

    pp = ParaphraseParams(backend="llm", dataset_dir=str(_two_splits(tmp_path)), out_dir=str(tmp_path / "out"),
                          splits=["train", "test"], max_clips={"train": 2}, captions_per_clip={"train": 1},
                          llm=_params(fake_llm, tmp_path), track=False)
    report = paraphrase_dataset(pp, progress=False)
    df = load_dataset(tmp_path / "out").manifest
    assert list(df["clip_id"]) == ["train0", "train1", "test0", "test1", "test2"]
    assert [len(c) for c in df["captions"]] == [1, 1, 3, 3, 3]
    assert [len(v) for v in df["paraphrases_v2"]] == [1, 1, 3, 3, 3]
    assert df["captions"][1] == ["A metallic clank train 1 0."]
    generations = [r for r in fake_llm.requests if r["body"]["messages"][0]["content"].startswith("You rewrite")]
    assert len(generations) == 11  # 2 + 9 captions, nothing else asked
    splits = report["subset"]["splits"]
    assert splits["train"]["n_clips"] == 2 and splits["train"]["n_captions"] == 2
    assert splits["test"]["n_captions"] == 9 and splits["test"]["acceptance"]["view1"]["n"] == 9
    assert splits["train"]["acceptance"]["all"]["n"] == 4
    assert report["subset"]["max_clips"] == {"train": 2}


def test_subset_params_are_checked_at_load():
    from clapcap.config import ConfigError
    from clapcap.paraphrase.dataset import ParaphraseParams

    with pytest.raises(ConfigError, match=r"max_clips: splits \['val'\] not in splits \['test'\]"):
        ParaphraseParams(splits=["test"], max_clips={"val": 3})
    with pytest.raises(ConfigError, match=r"captions_per_clip: expected counts >= 1, found \{'\*': 0\}"):
        ParaphraseParams(captions_per_clip=0)
