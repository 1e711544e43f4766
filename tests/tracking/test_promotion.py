"""Promotion on evidence (clapcap.tracking.promotion) on a temporary SQLite store: a candidate
that cannot be compared is a challenger that says why and how to promote it, a registration
outside the pipeline moves no alias, and a rerun finds a registration by its signature."""

from __future__ import annotations

import pytest

from clapcap import tracking
from clapcap.retrieval.item_scores import ITEM_SCORES_FILE, compare_with_champion
from clapcap.tracking.promotion import find_registration, register_on_evidence


def _scores(hits: list[float], items: list[str]) -> dict:
    return {"format": "clapcap.item_scores/1", "split": "test", "primary": "t2a/r@10", "dataset": None,
            "items": {"t2a": items}, "scores": {"t2a": {"r@10": hits}}}


def _register(name: str, scores: dict, **kw) -> dict:
    import mlflow

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):
            return model_input

    with tracking.tracked("register", experiment="clapcap-test-promotion", name="unit/promotion"):
        tracking.log_dict(scores, ITEM_SCORES_FILE)
        uri = tracking.log_pyfunc_model(Echo(), "echo")
        return register_on_evidence(uri, name, item_scores=scores, compare=compare_with_champion,
                                    artifact_file=ITEM_SCORES_FILE, **kw)


def _tags(name: str, version: int) -> dict:
    import mlflow

    return mlflow.MlflowClient().get_model_version(name, str(version)).tags


def test_a_candidate_scored_on_other_items_is_a_challenger_that_says_why_and_how_to_promote(mlflow_uri):
    name = "test-promotion-incomparable"
    real = _scores([1.0, 0.0] * 20, [f"real{i}#0" for i in range(40)])
    toy = _scores([1.0] * 4, [f"toy{i}#0" for i in range(4)])
    assert _register(name, toy)["alias"] == "champion"  # no champion yet
    decision = _register(name, real)  # another dataset: no paired comparison is possible
    assert decision["alias"] == "challenger" and decision["decision"] == "challenger"
    assert tracking.alias_version(name, "champion") == 1 and tracking.alias_version(name, "challenger") == 2
    tags = _tags(name, 2)
    assert tags["clapcap.decision"] == "challenger" and tags["clapcap.compared_to"] == "1"
    assert "not the same test items" in tags["clapcap.reason"]
    assert f"clapcap registry promote {name} 2 --reason" in tags["clapcap.reason"]


def test_a_registration_outside_the_pipeline_moves_no_alias(mlflow_uri):
    name = "test-promotion-adhoc"
    scores = _scores([1.0, 0.0], ["a#0", "b#0"])
    decision = _register(name, scores, promote=False)
    assert decision["alias"] is None and decision["decision"] == "none"
    assert tracking.alias_version(name, "champion") is None and tracking.alias_version(name, "challenger") is None
    reason = _tags(name, 1)["clapcap.reason"]
    assert "outside the DVC pipeline" in reason and f"clapcap registry promote {name} 1 --reason" in reason
    assert _register(name, scores)["alias"] == "champion"  # the pipeline's first registration


def test_find_registration_by_signature_tag(mlflow_uri):
    name = "test-promotion-find"
    scores = _scores([1.0], ["a#0"])
    assert find_registration(name, "s1") is None  # no such model yet
    _register(name, scores, tags={"clapcap.signature": "s1"})
    _register(name, scores, tags={"clapcap.signature": "s2"})
    assert find_registration(name, "s1") == {"version": 1, "decision": "champion"}
    assert find_registration(name, "s2") == {"version": 2, "decision": "challenger"}
    assert find_registration(name, "s3") is None


@pytest.mark.parametrize("alias", ["champion", "staging"])
def test_promote_command_names_the_alias(alias):
    from clapcap.tracking.promotion import promote_command

    command = promote_command("m", 3, alias)
    assert command.startswith("clapcap registry promote m 3") and ("--alias" in command) == (alias != "champion")


def test_the_model_and_each_version_carry_descriptions_the_ui_shows(mlflow_uri):
    import mlflow

    name = "test-promotion-described"
    better = _scores([1.0] * 40, [f"i{i}#0" for i in range(40)])
    worse = _scores([0.0] * 40, [f"i{i}#0" for i in range(40)])
    _register(name, worse, description="A test model: what it is and which stage makes it.")
    _register(name, better)
    client = mlflow.MlflowClient()
    assert client.get_registered_model(name).description == "A test model: what it is and which stage makes it."
    first = client.get_model_version(name, "1").description
    second = client.get_model_version(name, "2").description
    assert first.startswith(f"**{name} v1: @champion**") and "no champion yet" in first
    assert second.startswith(f"**{name} v2: @champion**") and "Against v1 on `t2a/r@10`: difference +1" in second
