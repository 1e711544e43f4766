"""Agreement statistics: kappas against statsmodels/scikit-learn, win rates, CSV errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa
from statsmodels.stats.proportion import proportion_confint

from clapcap.cli import main
from clapcap.pairwise.agreement import (
    cohen_kappa,
    compute_agreement,
    consensus,
    fleiss_kappa,
    run_agreement,
    wilson_interval,
)
from clapcap.pairwise.ratings import RatingsError, read_ratings, validate_ratings


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    n_raters = int(rng.integers(2, 8))
    table = np.stack([rng.multinomial(n_raters, rng.dirichlet([1, 1, 0.3])) for _ in range(30)])
    assert fleiss_kappa(table) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)


def test_fleiss_handles_unequal_rater_counts_and_degenerate_cases():
    # Unequal counts: each item's agreement uses its own count (drops the 1-rater item).
    table = np.array([[3, 0, 0], [0, 2, 0], [1, 1, 0], [1, 0, 0]])
    p_i = np.array([1.0, 1.0, 0.0])
    p_j = np.array([4, 3, 0]) / 7
    expected = (p_i.mean() - (p_j**2).sum()) / (1 - (p_j**2).sum())
    assert fleiss_kappa(table) == pytest.approx(expected)
    assert fleiss_kappa(np.array([[2, 0], [3, 0]])) is None  # one category only
    assert fleiss_kappa(np.array([[1, 0]])) is None
    with pytest.raises(ValueError):
        fleiss_kappa(np.array([1, 2]))


@pytest.mark.parametrize("seed", range(5))
def test_cohen_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    labels = np.array(["A", "B", "tie"])
    y1 = labels[rng.integers(0, 3, 40)]
    flip = rng.random(40) < 0.4
    y2 = np.where(flip, labels[rng.integers(0, 3, 40)], y1)
    assert cohen_kappa(list(y1), list(y2)) == pytest.approx(cohen_kappa_score(y1, y2), abs=1e-12)


def test_cohen_undefined_cases():
    assert cohen_kappa(["A"], ["A"]) is None
    assert cohen_kappa(["A", "A"], ["A", "A"]) is None
    with pytest.raises(ValueError):
        cohen_kappa(["A"], ["A", "B"])


def test_wilson_matches_statsmodels():
    low, high = wilson_interval(7, 20, 0.95)
    ref = proportion_confint(7, 20, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx(ref, abs=1e-9)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def _ratings() -> pd.DataFrame:
    rows = []
    # 6 items of gpt2|t5; humans h1..h3 mostly prefer A (gpt2); judges j1, j2.
    human = {"h1": "AAABAB", "h2": "AABBAB", "h3": "ABABAA"}
    judges = {"j1": "AABBAB", "j2": "ABABBA"}
    for rater, seq in human.items():
        rows += [(f"i{k}", "gpt2|t5", rater, "human", c) for k, c in enumerate(seq)]
    for rater, seq in judges.items():
        rows += [(f"i{k}", "gpt2|t5", rater, "audio_llm", c) for k, c in enumerate(seq)]
    return pd.DataFrame(rows, columns=["item_id", "pair_id", "rater", "pool", "choice"])


def test_compute_agreement_against_references():
    df = validate_ratings(_ratings())
    report = compute_agreement(df)
    gpt2 = report["win_rates"]["human"]["systems"]["gpt2"]
    assert gpt2["wins"] == 11 and gpt2["votes"] == 18 and gpt2["n_items"] == 6
    assert gpt2["win_rate"] == pytest.approx(11 / 18)
    assert (gpt2["ci_low"], gpt2["ci_high"]) == pytest.approx(
        proportion_confint(11, 18, method="wilson"), abs=1e-9)
    assert report["win_rates"]["human"]["systems"]["t5"]["win_rate"] == pytest.approx(7 / 18)
    # Fleiss within the human pool equals statsmodels on the counts table.
    counts = np.array([[3, 0], [2, 1], [2, 1], [0, 3], [3, 0], [1, 2]])
    fl = report["agreement"]["fleiss"]["human"]
    assert fl["kappa"] == pytest.approx(sm_fleiss_kappa(counts)) and fl["n_items"] == 6
    # Human consensus (majority of 3) = AAABAB; Cohen against each judge equals sklearn.
    human_cons = list("AAABAB")
    for judge, seq in {"j1": "AABBAB", "j2": "ABABBA"}.items():
        entry = report["agreement"]["human_vs_judge"][judge]
        assert entry["kappa"] == pytest.approx(cohen_kappa_score(human_cons, list(seq)))
        assert entry["n_items"] == 6
    jj = report["agreement"]["judge_vs_judge"]["j1 vs j2"]
    assert jj["kappa"] == pytest.approx(cohen_kappa_score(list("AABBAB"), list("ABABBA")))
    # The audio pool's consensus: j1 and j2 disagree on items 1, 2, 4, 5 -> no consensus there.
    assert report["agreement"]["consensus"]["audio_llm"]["n_with_consensus"] == 2


def test_consensus_ties_are_dropped():
    df = validate_ratings(pd.DataFrame({
        "item_id": ["x", "x", "y", "y", "y"], "pair_id": ["a|b"] * 5,
        "rater": ["r1", "r2", "r1", "r2", "r3"], "pool": ["human"] * 5,
        "choice": ["A", "B", "tie", "tie", "B"]}))
    cons = consensus(df)
    assert list(cons.index) == ["y"] and cons["y"] == "tie"


def test_run_agreement_cli(tmp_path):
    path = tmp_path / "ratings.csv"
    _ratings().to_csv(path, index=False)
    out = tmp_path / "agreement.json"
    assert main(["pairwise", "agreement", "--ratings", str(path), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["ci_method"] == "wilson" and set(data["pools"]) == {"human", "audio_llm"}
    assert run_agreement(path, tmp_path / "again.json")["n_votes"] == 30


@pytest.mark.parametrize("content, message", [
    ("item_id,pair_id,rater,choice\ni1,a|b,r1,A\n", "missing column(s) pool"),
    ("item_id,pair_id,rater,pool,choice\ni1,a|b,r1,human,A\ni1,a|b,r2,human,maybe\n",
     "row 3: unknown choice 'maybe'"),
    ("item_id,pair_id,rater,pool,choice\ni1,ab,r1,human,A\n", "row 2: pair_id 'ab'"),
    ("item_id,pair_id,rater,pool,choice\ni1,a|b,,human,A\n", "row 2: empty 'rater'"),
    ("item_id,pair_id,rater,pool,choice\ni1,a|b,r1,human,A\ni1,a|b,r1,human,B\n",
     "row 3: rater 'r1' voted twice"),
    ("item_id,pair_id,rater,pool,choice\ni1,a|b,r1,human,A\ni1,a|c,r2,human,B\n",
     "row 3: item 'i1' has pair_id 'a|c' but 'a|b' on an earlier row"),
    ("item_id,pair_id,rater,pool,choice\ni1,a|b,r1,human,A\ni2,a|b,r1,text_llm,B\n",
     "row 3: rater 'r1' is in pool 'text_llm' but in 'human'"),
    ("item_id,pair_id,rater,pool,choice\n", "no rating rows"),
])
def test_bad_csvs_name_file_and_row(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(RatingsError) as err:
        read_ratings(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_cli_reports_bad_csv_as_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    path.write_text("item_id,pair_id,rater,pool,choice\ni1,a|b,r1,human,C\n")
    assert main(["pairwise", "agreement", "--ratings", str(path), "--out", str(tmp_path / "o.json")]) == 2
    assert "unknown choice 'C'" in capsys.readouterr().err
    assert main(["pairwise", "agreement", "--ratings", str(tmp_path / "none.csv"),
                 "--out", str(tmp_path / "o.json")]) == 2


def test_choice_case_and_system_columns():
    df = validate_ratings(pd.DataFrame({
        "item_id": ["i1", "i1"], "pair_id": ["p1", "p1"], "rater": ["r1", "r2"], "pool": ["human"] * 2,
        "choice": ["a", " TIE "], "system_a": ["gpt2"] * 2, "system_b": ["t5"] * 2}))
    assert list(df["choice"]) == ["A", "tie"]
    rates = compute_agreement(df)["win_rates"]["human"]["systems"]
    assert rates["gpt2"]["win_rate"] == pytest.approx(0.75) and rates["t5"]["ties"] == 1
