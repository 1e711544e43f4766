"""Judges asked in both orders (clapcap.pairwise.orders) and measured on gold pairs
(clapcap.pairwise.gold): a judge that picks the first caption shown is caught and left out."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from fake_openai import FakeOpenAI

from clapcap.config import from_dict
from clapcap.experiments.pairwise.study import PairwiseStudyParams, run_pairwise_study
from clapcap.pairwise.gold import gold_accuracy, make_gold_items
from clapcap.pairwise.orders import combine_orders, order_rater, order_report, split_rater
from clapcap.pairwise.pairs import read_reference
from clapcap.pairwise.store import VoteStore

SOUNDS = ["a dog barks in the yard", "rain falls on a tin roof", "a car engine starts and idles",
          "a bell rings three times", "a man speaks on the telephone", "birds sing in the morning forest",
          "water drips into a metal sink", "a crowd cheers at a stadium"]


def _vote(item, rater, choice, pool="p", order="AB"):
    return {"item_id": item, "rater": rater, "pool": pool, "pair_id": "x|y", "choice": choice,
            "shown_order": order, "shown_choice": "", "created_at": 0.0}


def test_orders_combine_into_one_judgement_or_a_tie():
    votes = pd.DataFrame([
        _vote("c1::x|y", order_rater("m", "AB"), "A"), _vote("c1::x|y", order_rater("m", "BA"), "A", order="BA"),
        _vote("c2::x|y", order_rater("m", "AB"), "A"), _vote("c2::x|y", order_rater("m", "BA"), "B", order="BA"),
        _vote("c3::x|y", order_rater("m", "AB"), "B"),  # the BA ask failed: no judgement
        _vote("c1::x|y", "ann", "B", pool="human")])
    combined, incomplete = combine_orders(votes)
    got = {(r.rater, r.item_id): r.choice for r in combined.itertuples()}
    assert got == {("m", "c1::x|y"): "A", ("m", "c2::x|y"): "tie", ("ann", "c1::x|y"): "B"}
    assert incomplete == 1 and set(combined.columns) == set(votes.columns)
    assert split_rater("m#BA") == ("m", "BA") and split_rater("ann") == ("ann", None)
    assert split_rater("#AB") == ("#AB", None)
    with pytest.raises(ValueError, match="order"):
        order_rater("m", "BB")


def test_a_judge_that_picks_the_first_caption_is_never_consistent():
    # Always "caption 1": A when shown AB, B when shown BA.
    votes = pd.DataFrame([_vote(f"c{i}::x|y", order_rater("first", o), o[0], order=o)
                          for i in range(10) for o in ("AB", "BA")])
    report = order_report(votes)["p/first"]
    assert report["first_shown_rate"] == 1.0 and report["consistency"] == 0.0
    assert report["items_both_orders"] == 10 and report["first_shown_ci_low"] > 0.8
    combined, _ = combine_orders(votes)
    assert set(combined["choice"]) == {"tie"}


@pytest.fixture
def split(tmp_path):
    rows = [{"clip_id": f"c{i}", "caption": text} for i, text in enumerate(SOUNDS)]
    rows += [{"clip_id": "c0", "caption": "a dog is barking outside"}]  # c0 has two references
    path = tmp_path / "split.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_gold_items_pair_a_true_caption_with_a_decoy(split):
    reference = read_reference(split)
    assert reference.loc["c0", "captions"] == ["a dog barks in the yard", "a dog is barking outside"]
    gold = make_gold_items(reference, n_clips=8, seed=3)
    assert len(gold) == 16 and set(gold["gold"]) == {"B"} and set(gold["system_b"]) == {"reference"}
    c0 = gold[gold["clip_id"] == "c0"].set_index("gold_kind")
    assert c0.loc["other_clip", "caption_b"] == "a dog is barking outside"  # the second reference
    assert c0.loc["other_clip", "reference"] == "a dog barks in the yard"  # shown to text judges
    assert c0.loc["other_clip", "caption_a"] in SOUNDS[1:]
    shuffled = gold[gold["gold_kind"] == "shuffled"]
    for true, decoy in zip(shuffled["caption_b"], shuffled["caption_a"], strict=True):
        assert decoy != true and sorted(decoy.split()) == sorted(true.split())
    assert gold["item_id"].is_unique and all("::gold:" in i for i in gold["item_id"])
    pd.testing.assert_frame_equal(gold, make_gold_items(reference, n_clips=8, seed=3))
    with pytest.raises(ValueError, match="unknown gold kind"):
        make_gold_items(reference, n_clips=2, kinds=("paraphrase",))
    with pytest.raises(ValueError, match="at least two clips"):
        make_gold_items(reference.iloc[:1], n_clips=1)


def test_gold_accuracy_fails_a_position_biased_judge_and_passes_a_reader(split):
    gold = make_gold_items(read_reference(split), n_clips=8)
    rows = []
    for item in gold["item_id"]:
        for order in ("AB", "BA"):
            rows.append(_vote(item, order_rater("first", order), order[0], order=order))
            rows.append(_vote(item, order_rater("reader", order), "B", order=order))
    rows.append(_vote(gold["item_id"][0], "ann", "A", pool="human"))  # one-order votes do not count
    report = gold_accuracy(pd.DataFrame(rows), gold)
    assert set(report) == {"p/first", "p/reader"}
    assert report["p/first"]["accuracy"] == 0.5 and not report["p/first"]["passes"]
    assert report["p/first"]["both_orders_correct"] == 0.0 and report["p/first"]["order_votes"] == 32
    assert report["p/reader"]["accuracy"] == 1.0 and report["p/reader"]["passes"]
    assert report["p/reader"]["ci_low"] > 0.85 and report["p/reader"]["by_kind"] == {"other_clip": 1.0,
                                                                                      "shuffled": 1.0}


def _judges(body: dict):
    """``reader`` picks the caption sharing more words, in order, with the reference (a fair
    judge); ``first`` always answers 1."""
    if body["model"] == "first":
        return FakeOpenAI.chat("1")
    text = body["messages"][-1]["content"]
    ref = text.split("clip: ")[1].split("\n")[0].split()
    caps = [text.split(f"Caption {k}: ")[1].split("\n")[0].split() for k in (1, 2)]

    def score(words):
        bigrams = set(zip(words, words[1:], strict=False))
        return len(set(words) & set(ref)) + len(bigrams & set(zip(ref, ref[1:], strict=False)))

    return FakeOpenAI.chat("1" if score(caps[0]) >= score(caps[1]) else "2")


@pytest.fixture
def study(tmp_path, split):
    clips = [f"c{i}" for i in range(len(SOUNDS))]
    (tmp_path / "good.json").write_text(json.dumps({c: SOUNDS[i] + " again" for i, c in enumerate(clips)}))
    (tmp_path / "bad.json").write_text(json.dumps({c: SOUNDS[(i + 4) % 8] for i, c in enumerate(clips)}))
    api = FakeOpenAI(default=_judges)

    def params(models):
        judges = [{"pool": f"p_{m}", "models": [m], "base_url": api.url, "env_file": "", "key_required": False,
                   "backoff_s": 0.0} for m in models]
        return from_dict(PairwiseStudyParams, {
            "systems": {"good": str(tmp_path / "good.json"), "bad": str(tmp_path / "bad.json")},
            "reference_split": str(split), "include_reference": False, "n_clips": 8, "gold_clips": 8,
            "out_dir": str(tmp_path / "out"), "votes_db": str(tmp_path / "votes" / "judges.sqlite"),
            "human_dir": str(tmp_path / "human"), "judges": judges, "n_resamples": 200})

    yield params, api
    api.close()


def test_study_leaves_out_the_judge_that_fails_gold(study, tmp_path):
    params, api = study
    summary = run_pairwise_study(params(["reader", "first"]))
    assert summary["judges_left_out"] == ["p_first/first"]
    # The word-overlap reader misses one order of one gold item (c0's two references share
    # few words), and is still far above chance.
    assert summary["gold_accuracy"]["p_first/first"] == 0.5
    assert summary["gold_accuracy"]["p_reader/reader"] == 31 / 32
    assert summary["verdict"] == "1 of 2 judge(s) pass the gold pairs: p_reader/reader"
    assert summary["order_consistency"]["p_first/first"] == 0.0
    assert summary["first_shown_rate"]["p_first"] == 1.0
    # Preference and agreement rest on the reader only: 8 items, one judgement each.
    assert summary["n_votes"] == 8 and set(summary["fleiss_kappa"]) == {"p_reader"}
    assert summary["preference"]["good"]["rate"] == 1.0
    assert len(api.requests) == 2 * 2 * (8 + 16)  # judges x orders x (items + gold items)
    gold = pd.read_csv(tmp_path / "out" / "gold.csv")
    assert len(gold) == 16 and (gold["gold"] == "B").all()
    report = json.loads((tmp_path / "out" / "agreement.json").read_text())
    assert report["gold"]["p_first/first"]["passes"] is False and report["incomplete_judgements"] == 0


def test_when_no_judge_passes_the_study_says_so_and_waits_for_people(study, tmp_path):
    params, _ = study
    p = params(["first"])
    summary = run_pairwise_study(p)
    assert summary["verdict"].startswith("no judge passes the gold pairs (1 judge(s), best accuracy 0.50")
    assert summary["n_votes"] == 0 and summary["preference"] == {} and summary["fleiss_kappa"] == {}
    assert (tmp_path / "out" / "preference.png").read_bytes()[:4] == b"\x89PNG"
    # Human votes from the rating page then carry the study on the next run.
    pairs = pd.read_csv(tmp_path / "out" / "pairs.csv")
    human = VoteStore(tmp_path / "human" / "votes.sqlite")
    for item, pair in zip(pairs["item_id"], pairs["pair_id"], strict=True):
        human.record_vote(item_id=item, rater="ann", pool="web", pair_id=pair, choice="B", shown_order="AB")
    summary = run_pairwise_study(p)
    assert summary["n_votes"] == 8 and summary["n_human_votes"] == 8
    report = json.loads((tmp_path / "out" / "agreement.json").read_text())
    assert report["preference"]["human"]["good"]["rate"] == 1.0  # A is `bad`, B is `good`
