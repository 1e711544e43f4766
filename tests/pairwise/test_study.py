"""The pairwise study end to end (clapcap.experiments.pairwise.study) against the suite's fake judge
server: items, the judges' votes (resumed on a rerun), human votes from the rating page's
store, kappas, bootstrap preference rates, position bias, the plot."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from fake_openai import FakeOpenAI

from clapcap.config import from_dict
from clapcap.experiments.pairwise.study import PairwiseStudyParams, run_pairwise_study
from clapcap.pairwise.agreement import bootstrap_preferences
from clapcap.pairwise.store import VoteStore


def _judge(body: dict):
    """Prefers the caption that mentions a dog; answers by the position shown."""
    text = body["messages"][-1]["content"]
    line1 = text.split("Caption 1:")[1].split("\n")[0]
    return FakeOpenAI.chat("1" if "dog" in line1 else "2")


@pytest.fixture
def study(tmp_path):
    clips = [f"c{i}" for i in range(6)]
    split = tmp_path / "split.csv"
    pd.DataFrame({"clip_id": clips, "caption": [f"a dog barks {i}" for i in range(6)]}).to_csv(split, index=False)
    (tmp_path / "good.json").write_text(json.dumps({c: f"a dog barks near {c}" for c in clips}))
    (tmp_path / "bad.json").write_text(json.dumps({c: f"a bell rings {c}" for c in clips}))
    api = FakeOpenAI(default=_judge)
    judges = [{"pool": "p1", "models": ["j1", "j2"], "base_url": api.url, "env_file": "", "key_required": False,
               "backoff_s": 0.0},
              {"pool": "p2", "models": ["j3"], "base_url": api.url, "env_file": "", "key_required": False,
               "backoff_s": 0.0}]
    params = from_dict(PairwiseStudyParams, {
        "systems": {"good": str(tmp_path / "good.json"), "bad": str(tmp_path / "bad.json")},
        "reference_split": str(split), "include_reference": False, "n_clips": 6,
        "out_dir": str(tmp_path / "out"), "votes_db": str(tmp_path / "votes" / "judges.sqlite"),
        "human_dir": str(tmp_path / "human"), "judges": judges, "n_resamples": 200, "gold_clips": 0})
    yield params, api
    api.close()


def test_study_end_to_end_then_resumes_and_takes_human_votes(study, tmp_path):
    params, api = study
    summary = run_pairwise_study(params)
    assert summary["n_items"] == 6 and summary["n_votes"] == 18 and summary["n_human_votes"] == 0
    assert summary["preference"]["good"]["rate"] == 1.0 and summary["preference"]["bad"]["rate"] == 0.0
    # Every judge voted for `good` on every item: one category, chance agreement 1, so the
    # kappas are undefined (None), not 1.
    assert summary["fleiss_kappa"] == {"p1": None, "p2": None} and summary["judge_cohen_kappa_mean"] is None
    report = json.loads((tmp_path / "out" / "agreement.json").read_text())
    assert report["agreement"]["judge_vs_judge"]["j1 vs j2"]["raw_agreement"] == 1.0
    assert summary["failed_judgements"] == {"p1": 0, "p2": 0}
    assert 0.0 <= summary["first_shown_rate"]["p1"] <= 1.0
    assert (tmp_path / "out" / "preference.png").read_bytes()[:4] == b"\x89PNG"
    n_requests = len(api.requests)
    assert n_requests == 36  # 6 items x 3 judges x 2 orders
    assert summary["order_consistency"] == {"p1/j1": 1.0, "p1/j2": 1.0, "p2/j3": 1.0}
    assert summary["verdict"] == "no gold items: every judge counts, unchecked"

    # A rerun asks nothing again; a human vote (against the judges) joins as pool `human`.
    human = VoteStore(tmp_path / "human" / "votes.sqlite")  # A = `bad` (systems sort by name)
    pairs = pd.read_csv(tmp_path / "out" / "pairs.csv")
    for item, pair in zip(pairs["item_id"][:4], pairs["pair_id"][:4], strict=True):
        human.record_vote(item_id=item, rater="ann", pool="web", pair_id=pair, choice="A", shown_order="AB")
    summary = run_pairwise_study(params)
    assert len(api.requests) == n_requests
    assert summary["n_human_votes"] == 4 and set(summary["human_vs_judge_cohen_kappa"]) == {"j1", "j2", "j3"}
    report = json.loads((tmp_path / "out" / "agreement.json").read_text())
    assert report["pools"] == {"human": 4, "p1": 12, "p2": 6}
    assert report["preference"]["human"]["good"]["rate"] == 0.0  # the human disagreed every time


def test_bootstrap_interval_covers_and_resamples_clips():
    rng = np.random.default_rng(0)
    rows = []
    for clip in range(40):
        p = 0.7  # system x wins 70 % of votes
        for rater in range(3):
            rows.append({"item_id": f"c{clip}::x__vs__y", "pool": "j", "system_a": "x", "system_b": "y",
                         "choice": "A" if rng.random() < p else "B", "rater": f"r{rater}"})
    df = pd.DataFrame(rows)
    out = bootstrap_preferences(df, n_resamples=500, seed=1)
    x = out["j"]["x"]
    assert x["ci_low"] < x["rate"] < x["ci_high"] and x["n_clips"] == 40 and x["votes"] == 120
    assert out["all judges"]["x"]["rate"] == x["rate"]
    assert abs(out["j"]["y"]["rate"] - (1 - x["rate"])) < 1e-12
    again = bootstrap_preferences(df, n_resamples=500, seed=1)
    assert again == out
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_preferences(df, confidence=1.5)


def test_params_need_two_systems_and_judges(tmp_path):
    with pytest.raises(ValueError, match="two systems"):
        from_dict(PairwiseStudyParams, {"systems": {"a": "a.json"}, "include_reference": False,
                                        "judges": [{"pool": "p", "models": ["m"]}]})
    with pytest.raises(ValueError, match="not 'human'"):
        from_dict(PairwiseStudyParams, {"systems": {"a": "a.json"}, "judges": [{"pool": "human", "models": ["m"]}]})
