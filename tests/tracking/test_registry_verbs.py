"""`clapcap registry compare` / `promote` on a temporary SQLite store, and the per-item scores
they read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clapcap import tracking
from clapcap.cli import main
from clapcap.errors import InputError
from clapcap.retrieval.item_scores import (
    ITEM_SCORES_FILE,
    check_item_scores,
    compare_item_scores,
    retrieval_item_scores,
)


def _scores(hits: list[float], *, split: str = "test", items: list[str] | None = None) -> dict:
    items = items or [f"c{i}#0" for i in range(len(hits))]
    return {"format": "clapcap.item_scores/1", "split": split, "primary": "t2a/r@10", "dataset": "e" * 64,
            "items": {"t2a": items}, "scores": {"t2a": {"r@10": hits, "mrr": [h / 2 for h in hits]}}}


def test_retrieval_item_scores_name_queries_and_score_them():
    audio = np.eye(3)
    text = audio[[0, 0, 1, 2]] + 0.01  # captions 0, 1 of clip 0; one each of clips 1, 2
    data = retrieval_item_scores(audio, text, np.array([0, 0, 1, 2]), clip_ids=["a", "b", "c"], split="test")
    check_item_scores(data, "here")
    assert data["items"] == {"t2a": ["a#0", "a#1", "b#0", "c#0"], "a2t": ["a", "b", "c"]}
    assert data["scores"]["t2a"]["r@1"] == [1.0, 1.0, 1.0, 1.0]
    assert json.loads(json.dumps(data)) == data  # plain JSON


def test_compare_identical_and_different_scores():
    same = compare_item_scores(_scores([1.0, 0.0] * 20), _scores([1.0, 0.0] * 20), n_resamples=200)
    assert same["difference"] == 0.0 and same["p_value"] == 1.0 and same["metric"] == "t2a/r@10"
    better = compare_item_scores(_scores([1.0] * 40), _scores([1.0, 0.0] * 20), n_resamples=200)
    assert better["difference"] == pytest.approx(0.5) and better["p_value"] < 0.05
    assert better["n_items"] == 40 and better["ci"]["low"] > 0
    mrr = compare_item_scores(_scores([1.0] * 40), _scores([1.0, 0.0] * 20), metric="t2a/mrr", n_resamples=50)
    assert mrr["difference"] == pytest.approx(0.25)


@pytest.mark.parametrize(("b", "metric", "message"), [
    (_scores([1.0, 0.0], items=["c0#0", "x#0"]), None, "item 2 differs: 'c1#0'"),
    (_scores([1.0, 0.0], split="val"), None, "split 'test'"),
    ({**_scores([1.0, 0.0]), "dataset": "f" * 64}, None, "dataset eeeeeeeeeeee"),
    (_scores([1.0, 0.0, 1.0]), None, "has 2 t2a items, B has 3"),
    (_scores([1.0, 0.0]), "t2a/r@5", "no per-item scores for 't2a/r@5'"),
    ({"format": "other"}, None, "B: expected item scores in format"),
    ({**_scores([1.0, 0.0]), "scores": {"t2a": {"r@10": [1.0]}}}, None, "has 1 values for 2 items"),
])
def test_compare_refuses_what_cannot_be_paired(b, metric, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        compare_item_scores(_scores([1.0, 0.0]), b, metric=metric, n_resamples=10)


def _register(name: str, hits: list[float] | None, *, alias: str | None = None) -> int:
    import mlflow

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    with tracking.tracked("register", experiment="clapcap-test-registry", name="unit/register"):
        if hits is not None:
            tracking.log_dict(_scores(hits), ITEM_SCORES_FILE)
        uri = tracking.log_pyfunc_model(Echo(), "echo")
    return tracking.register_model(uri, name, alias=alias)


def test_registry_compare_and_promote(mlflow_uri, capsys, monkeypatch):
    import mlflow

    monkeypatch.delenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", raising=False)  # the tracking module sets it
    name = "test-registry-verbs"
    assert _register(name, [1.0, 0.0] * 20, alias="champion") == 1
    assert _register(name, [1.0] * 40) == 2
    assert _register(name, None) == 3  # registered before versions carried item scores

    assert main(["registry", "compare", name, "2", "1", "--bootstrap", "200"]) == 0
    out, err = capsys.readouterr()
    assert "Downloading artifacts" not in err  # MLflow's bars do not leak between the command's lines
    assert "paired on the same 40 test items" in out and "t2a/r@10" in out and "A-B +0.5000" in out
    assert main(["registry", "compare", name, "1", "2", "--json", "--bootstrap", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["difference"] == pytest.approx(-0.5)
    assert main(["registry", "compare", name, "1", "3"]) == 2
    err = capsys.readouterr().err
    assert f"{name} version 3" in err and ITEM_SCORES_FILE in err

    assert main(["registry", "promote", name, "2", "--by", "alice", "--reason", "better R@10 on test"]) == 0
    assert "@champion: v1 -> v2 (by alice" in capsys.readouterr().out
    assert tracking.alias_version(name, "champion") == 2
    tags = mlflow.MlflowClient().get_model_version(name, "2").tags
    assert tags["clapcap.promoted_by"] == "alice" and tags["clapcap.previous_champion"] == "1"
    assert tags["clapcap.promoted_reason"] == "better R@10 on test" and tags["clapcap.promotion"] == "manual"
    assert tags["clapcap.promoted_at"].endswith("+00:00")
    assert mlflow.MlflowClient().get_model_version(name, "1").tags["clapcap.replaced_by"].startswith("2 ")

    assert main(["registry", "promote", name, "9", "--reason", "typo"]) == 2
    assert "has no version 9" in capsys.readouterr().err
    assert tracking.alias_version(name, "champion") == 2


def test_promote_without_a_previous_champion_records_none(mlflow_uri):
    name = "test-registry-first"
    _register(name, [1.0])
    done = tracking.promote(name, 1, by="bob", reason="first")
    assert done["previous"] is None
    import mlflow

    assert mlflow.MlflowClient().get_model_version(name, "1").tags["clapcap.previous_champion"] == "none"
    with pytest.raises(InputError, match="who"):
        tracking.promote(name, 1, by=" ", reason="x")
