"""The library's one Markdown and LaTeX table writer, and the report's marking rules.

:func:`markdown_table` and :func:`latex_table` render any grid of cells (used by the report
below, :mod:`clapcap.reporting.captioning_tables` and :mod:`clapcap.experiments.robust.report`);
:func:`tex_escape` holds the one LaTeX escape table. Markdown cells are written as given
(no table escapes them). Tables written before the merge escaped fewer LaTeX characters;
they name theirs with ``tex_escape(..., only=...)`` so their files stay byte-identical.

Rules of the report's :class:`Table` (shared by every report table):

- a row with ``leaky`` true (it may have seen test data) carries a dagger after its name
  (``†`` in Markdown, ``$^\\dagger$`` in LaTeX) and is never bold;
- in each metric column the best value among the non-leaky rows is bold (all rows tied
  at the best); "best" is the largest value unless the metric is in ``lower_is_better``;
- nothing is bold in a table with fewer than two non-leaky rows with a value;
- a value with a ``std`` is written ``mean ± std``; a missing value is ``–``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
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


def tex_escape(text: str, only: Collection[str] | None = None, overrides: Mapping[str, str] | None = None) -> str:
    """Escape LaTeX special characters (and map †, ‡, ±, Δ to math).

    Args:
        text: the text (converted with ``str``).
        only: escape just these characters (the others are kept as given); all by default.
        overrides: replacements that take precedence over the escape table for their characters.
    """
    table = _TEX_ESCAPES if only is None else {ch: _TEX_ESCAPES[ch] for ch in only}
    table = {**table, **(overrides or {})}
    return "".join(table.get(ch, ch) for ch in str(text))


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "",
                   title: str | None = None, heading: bool = True) -> str:
    """A GitHub pipe table (no trailing newline); cells are written as given.

    Args:
        header: column names.
        rows: cell texts per row.
        align: one letter per column, ``r`` right-aligned (``---:``), anything else ``---``;
            all ``---`` when empty.
        title: written above the table as a ``###`` heading (``heading``) or a bold line,
            then a blank line; nothing when ``None``.
        heading: see ``title``.
    """
    lines = [] if title is None else [f"### {title}" if heading else f"**{title}**", ""]
    lines += ["| " + " | ".join(header) + " |",
              "|" + "".join("---:|" if a == "r" else "---|" for a in (align or "l" * len(header)))]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def latex_table(header: Sequence[str], rows: Sequence[Sequence[str]], spec: str, *, caption: str | None = None,
                label: str = "", placement: str = "ht", small: bool = False, notes: Sequence[str] = ()) -> str:
    """A booktabs ``tabular`` (no trailing newline); header, cells, caption and notes are LaTeX.

    Escape text with :func:`tex_escape` first. With a ``caption`` the tabular is wrapped in a
    ``table`` environment at ``placement`` (``\\small`` when ``small``, ``\\label`` when
    ``label``, the ``notes`` in a footnote-size paragraph below the tabular).
    """
    lines = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(header) + r" \\", r"\midrule"]
    lines += [" & ".join(cells) + r" \\" for cells in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption is None:
        return "\n".join(lines)
    head = [rf"\begin{{table}}[{placement}]", r"\centering", *([r"\small"] if small else []),
            rf"\caption{{{caption}}}", *([rf"\label{{{label}}}"] if label else [])]
    tail = [r"\par\footnotesize " + " ".join(notes)] if notes else []
    return "\n".join([*head, *lines, *tail, r"\end{table}"])


def _cells(table: Table) -> tuple[list[list[str]], list[list[bool]]]:
    bold = best_rows(table)
    body, flags = [], []
    for i, row in enumerate(table.rows):
        name = row.name + (DAGGER_MD if row.leaky else "")
        values = [format_value(row.values.get(m), row.std.get(m), table.digits) for m in table.metrics]
        body.append([name, *(row.cells.get(c, "") for c in table.text_columns), *values])
        flags.append([False] * (1 + len(table.text_columns)) + [i in bold[m] for m in table.metrics])
    return body, flags


def _align(table: Table) -> str:
    return "l" * (1 + len(table.text_columns)) + "r" * len(table.metrics)


def to_markdown(table: Table, *, heading: bool = True) -> str:
    """The table as GitHub Markdown (title as a ``###`` heading or bold line, notes below)."""
    header = ["name", *table.text_columns, *table.metrics]
    body, flags = _cells(table)
    rows = [[f"**{c}**" if b else c for c, b in zip(cells, bold, strict=True)]
            for cells, bold in zip(body, flags, strict=True)]
    lines = [markdown_table(header, rows, _align(table), title=table.title, heading=heading)]
    if any(r.leaky for r in table.rows):
        lines += ["", f"{DAGGER_MD} may have seen test data (leaky): shown for reference, never bold."]
    lines += [""] + [f"{note}" for note in table.notes] if table.notes else []
    return "\n".join(lines) + "\n"


def to_latex(table: Table, label: str = "") -> str:
    """The table as a LaTeX ``table`` environment (booktabs rules)."""
    header = ["name", *table.text_columns, *table.metrics]
    body, flags = _cells(table)
    rows = [[rf"\textbf{{{tex_escape(c)}}}" if b else tex_escape(c) for c, b in zip(cells, bold, strict=True)]
            for cells, bold in zip(body, flags, strict=True)]
    notes = list(table.notes)
    if any(r.leaky for r in table.rows):
        notes.insert(0, f"{DAGGER_MD} may have seen test data (leaky); never bold.")
    return latex_table([tex_escape(h) for h in header], rows, _align(table),
                       caption=tex_escape(table.title), label=label,
                       notes=[tex_escape(n) for n in notes]) + "\n"


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
