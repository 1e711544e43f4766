"""Markdown and LaTeX tables with the report's marking rules.

Rules (shared by every table):

- a row with ``leaky`` true (it may have seen test data) carries a dagger after its name
  (``†`` in Markdown, ``$^\\dagger$`` in LaTeX) and is never bold;
- in each metric column the best value among the non-leaky rows is bold (all rows tied
  at the best); "best" is the largest value unless the metric is in ``lower_is_better``;
- nothing is bold in a table with fewer than two non-leaky rows with a value;
- a value with a ``std`` is written ``mean ± std``; a missing value is ``–``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DAGGER_MD = "†"
DAGGER_TEX = r"$^\dagger$"
_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}",
                "†": DAGGER_TEX, "‡": r"$^\ddagger$", "±": r"$\pm$", "Δ": r"$\Delta$"}


@dataclass
class Row:
    """One table row: a name, metric values, optional std, leak flag and extra text cells."""

    name: str
    values: dict[str, float | None]
    std: dict[str, float] = field(default_factory=dict)
    leaky: bool = False
    cells: dict[str, str] = field(default_factory=dict)  # non-metric columns, shown as given


@dataclass
class Table:
    """A table: its rows, metric columns (in order) and text columns shown before them."""

    title: str
    rows: list[Row]
    metrics: list[str]
    text_columns: list[str] = field(default_factory=list)
    lower_is_better: set[str] = field(default_factory=set)
    digits: int = 3
    notes: list[str] = field(default_factory=list)
    bold: bool = True  # False for tables where "best" means nothing (the leaderboard)


def best_rows(table: Table) -> dict[str, set[int]]:
    """Indices of the rows that are bold in each metric column (see module rules)."""
    out: dict[str, set[int]] = {m: set() for m in table.metrics}
    if not table.bold:
        return out
    for metric in table.metrics:
        eligible = [(i, r.values.get(metric)) for i, r in enumerate(table.rows) if not r.leaky]
        eligible = [(i, v) for i, v in eligible if v is not None and not math.isnan(v)]
        if len(eligible) < 2:
            continue
        pick = min if metric in table.lower_is_better else max
        best = pick(v for _, v in eligible)
        out[metric] = {i for i, v in eligible if math.isclose(v, best, rel_tol=1e-12, abs_tol=1e-12)}
    return out


def format_value(value: float | None, std: float | None, digits: int) -> str:
    """``0.123 ± 0.004``, ``0.123`` or ``–`` for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{value:.{digits}f}"
    return f"{text} ± {std:.{digits}f}" if std is not None else text


def tex_escape(text: str) -> str:
    """Escape LaTeX special characters (and map †, ‡, ±, Δ to math)."""
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))


def _cells(table: Table) -> tuple[list[list[str]], list[list[bool]]]:
    bold = best_rows(table)
    body, flags = [], []
    for i, row in enumerate(table.rows):
        name = row.name + (DAGGER_MD if row.leaky else "")
        values = [format_value(row.values.get(m), row.std.get(m), table.digits) for m in table.metrics]
        body.append([name, *(row.cells.get(c, "") for c in table.text_columns), *values])
        flags.append([False] * (1 + len(table.text_columns)) + [i in bold[m] for m in table.metrics])
    return body, flags


def to_markdown(table: Table, *, heading: bool = True) -> str:
    """The table as GitHub Markdown (title as a ``###`` heading or bold line, notes below)."""
    header = ["name", *table.text_columns, *table.metrics]
    body, flags = _cells(table)
    lines = [f"### {table.title}" if heading else f"**{table.title}**", "",
             "| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] * (1 + len(table.text_columns)) + ["---:"] * len(table.metrics)) + "|"]
    for cells, bold in zip(body, flags, strict=True):
        lines.append("| " + " | ".join(f"**{c}**" if b else c for c, b in zip(cells, bold, strict=True)) + " |")
    if any(r.leaky for r in table.rows):
        lines += ["", f"{DAGGER_MD} may have seen test data (leaky): shown for reference, never bold."]
    lines += [""] + [f"{note}" for note in table.notes] if table.notes else []
    return "\n".join(lines) + "\n"


def to_latex(table: Table, label: str = "") -> str:
    """The table as a LaTeX ``table`` environment (booktabs rules)."""
    header = ["name", *table.text_columns, *table.metrics]
    body, flags = _cells(table)
    spec = "l" * (1 + len(table.text_columns)) + "r" * len(table.metrics)
    lines = [r"\begin{table}[ht]", r"\centering", rf"\caption{{{tex_escape(table.title)}}}"]
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
              " & ".join(tex_escape(h) for h in header) + r" \\", r"\midrule"]
    for cells, bold in zip(body, flags, strict=True):
        out = [rf"\textbf{{{tex_escape(c)}}}" if b else tex_escape(c) for c, b in zip(cells, bold, strict=True)]
        lines.append(" & ".join(out) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    notes = list(table.notes)
    if any(r.leaky for r in table.rows):
        notes.insert(0, f"{DAGGER_MD} may have seen test data (leaky); never bold.")
    if notes:
        lines.append(r"\par\footnotesize " + " ".join(tex_escape(n) for n in notes))
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def rows_from_records(records: Sequence[Mapping[str, Any]], text_columns: Sequence[str] = ()) -> list[Row]:
    """Rows from validated input records (``name``, ``metrics``, ``std``, ``leaky``)."""
    return [Row(name=str(r["name"]), values=dict(r.get("metrics", {})), std=dict(r.get("std") or {}),
                leaky=bool(r.get("leaky", False)),
                cells={c: str(r.get(c, "")) for c in text_columns}) for r in records]


def metric_order(records: Sequence[Mapping[str, Any]], preferred: Sequence[str] | None = None) -> list[str]:
    """``preferred`` if given, else metric names in order of first appearance."""
    if preferred:
        return list(preferred)
    seen: dict[str, None] = {}
    for r in records:
        for key in r.get("metrics", {}):
            seen.setdefault(key, None)
    return list(seen)
