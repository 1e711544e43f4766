"""Table marking rules: leaky rows carry a dagger and are never bold."""

from __future__ import annotations

from clapcap.reporting.tables import (
    Row,
    Table,
    best_rows,
    format_value,
    tex_escape,
    to_latex,
    to_markdown,
)


def _table(**kw) -> Table:
    rows = [Row("pipeline_a", {"CIDEr": 0.41, "loss": 2.0}),
            Row("pipeline_b", {"CIDEr": 0.33, "loss": 1.5}),
            Row("leaky_ref", {"CIDEr": 0.90, "loss": 0.1}, leaky=True),
            Row("clean_ref", {"CIDEr": 0.41, "loss": None}, std={"CIDEr": 0.01})]
    return Table("t", rows, ["CIDEr", "loss"], lower_is_better={"loss"}, **kw)


def test_best_excludes_leaky_rows_and_keeps_ties():
    best = best_rows(_table())
    assert best["CIDEr"] == {0, 3}  # tie between the two 0.41 rows; the leaky 0.90 is not bold
    assert best["loss"] == {1}      # lower is better; leaky 0.1 and missing values ignored


def test_no_bold_with_one_eligible_row_or_when_disabled():
    table = Table("t", [Row("a", {"m": 1.0}), Row("b", {"m": 2.0}, leaky=True)], ["m"])
    assert best_rows(table) == {"m": set()}
    assert best_rows(_table(bold=False)) == {"CIDEr": set(), "loss": set()}


def test_markdown_dagger_and_bold():
    md = to_markdown(_table())
    assert "| leaky_ref† | 0.900 | 0.100 |" in md
    assert "| **pipeline_a** |" not in md and "| pipeline_a | **0.410** | 2.000 |" in md
    assert "| clean_ref | **0.410 ± 0.010** | – |" in md
    assert "† may have seen test data" in md


def test_latex_dagger_bold_and_escaping():
    tex = to_latex(_table(), "tab:x")
    assert r"leaky\_ref$^\dagger$ & 0.900 & 0.100 \\" in tex
    assert r"\textbf{0.410 $\pm$ 0.010}" in tex and r"\label{tab:x}" in tex
    assert r"\textbf{0.900}" not in tex
    assert tex_escape("a_b & 50% #1") == r"a\_b \& 50\% \#1"
    assert format_value(None, None, 3) == "–" and format_value(float("nan"), None, 2) == "–"
