"""Markdown and LaTeX tables of a RobustCLAP benchmark, in the paper's shape.

Rows are models, column groups are benchmarks (original vs paraphrased views); values
are percentages with their 95 % bootstrap interval. Further tables give the drop from
original to paraphrased, the paired candidate-vs-base test and the zero-shot check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap.experiments.robust.config import ZS, ZS_CUTOFF, ZS_MAP, RobustBenchParams
from clapcap.reporting.tables import latex_table, markdown_table, tex_escape
from clapcap.utils.io import atomic_path

Table = tuple[str, list[str], list[list[tuple[str, str]]]]  # title, header, rows of (md, tex) cells

# These tables escape only ``_`` and ``%`` in LaTeX text (and map Δ in headers); their
# value cells are LaTeX already. Kept so benchmark.tex stays unchanged.
_TEX_ONLY = "_%"
BENCH_NAMES = {"original": "Original", "view1": "View 1 (structure)", "view2": "View 2 (vocabulary)",
               "heldout": "Held-out vocabulary"}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _cell(m: dict[str, Any], metric: str) -> tuple[str, str]:
    lo, hi = m["ci"][metric]["low"], m["ci"][metric]["high"]
    v = _pct(m[metric])
    return f"{v} [{_pct(lo)}, {_pct(hi)}]", f"{v}\\,{{\\scriptsize[{_pct(lo)}, {_pct(hi)}]}}"


def _delta(d: dict[str, Any]) -> tuple[str, str]:
    diff = f"{100 * d['difference']:+.1f}"
    if "ci" not in d:
        return diff, diff
    ci = f"[{100 * d['ci']['low']:+.1f}, {100 * d['ci']['high']:+.1f}]"
    p = f"p={d['p_value']:.3g}"
    return f"{diff} {ci} {p}", f"{diff}\\,{{\\scriptsize{ci} {p}}}"


def _text(s: str) -> tuple[str, str]:
    return s, tex_escape(s, only=_TEX_ONLY)


def retrieval_table(result: dict[str, Any], params: RobustBenchParams, direction: str) -> Table:
    """Model x benchmark, R@k of one direction."""
    header = ["Model"] + [f"{BENCH_NAMES.get(b, b)} R@{k}" for b in params.benchmarks for k in params.ks]
    rows = [[_text(name)] + [_cell(res[b][direction], f"r@{k}") for b in params.benchmarks for k in params.ks]
            for name, res in result["models"].items()]
    title = f"{direction} retrieval on {params.split} (%, {int(100 * params.confidence)}% bootstrap CI)"
    return title, header, rows


def drop_table(result: dict[str, Any], params: RobustBenchParams) -> Table:
    """Paraphrased minus original (points), per model, with paired CIs."""
    views = [b for b in params.benchmarks if b != "original"]
    cols = [(v, d, k) for v in views for d in ("t2a", "a2t") for k in (params.ks[0], params.ks[-1])]
    header = ["Model"] + [f"{BENCH_NAMES.get(v, v)} {d} R@{k}" for v, d, k in cols]
    rows = [[_text(name)] + [_delta(dr[v][d][f"r@{k}"]) for v, d, k in cols]
            for name, dr in result["drops"].items()]
    return "Drop from original to paraphrased (points, paired bootstrap)", header, rows


def paired_table(result: dict[str, Any], params: RobustBenchParams) -> Table:
    """Candidate minus base per benchmark (points, paired bootstrap CI and p-value)."""
    cols = [(d, k) for d in ("t2a", "a2t") for k in (params.ks[0], params.ks[-1])]
    header = ["Benchmark"] + [f"{d} R@{k}" for d, k in cols]
    rows = [[_text(BENCH_NAMES.get(b, b))] + [_delta(result["paired"][b][d][f"r@{k}"]) for d, k in cols]
            for b in params.benchmarks]
    return f"{params.candidate} minus {params.base} (points, paired bootstrap)", header, rows


def zero_shot_table(result: dict[str, Any], params: RobustBenchParams) -> Table:
    """Zero-shot ``map_norm_min@10`` and accuracy per model, and the candidate's change from the base."""
    ap = f"mAP@{ZS_CUTOFF} (norm. min(labels, {ZS_CUTOFF}))"
    header = ["Model", ap, "Accuracy", f"Δ {ap} vs {params.base}", f"Δ accuracy vs {params.base}"]
    rows = []
    for name, res in result["models"].items():
        zs = res[ZS]
        if name == params.candidate:
            paired = result["paired"][ZS]["a2l"]
            deltas = [_delta(paired[ZS_MAP]), _delta(paired["accuracy"])]
        else:
            deltas = [("", ""), ("", "")]
        rows.append([_text(name), _cell(zs, ZS_MAP), _cell(zs, "accuracy"), *deltas])
    n = next(iter(result["models"].values()))[ZS]["n_clips"]
    return f"Zero-shot classification ('{params.label_prompt}', {n} clips, %)", header, rows


def to_markdown(tables: list[Table]) -> str:
    """Markdown: a heading and a pipe table per table."""
    out = []
    for title, header, rows in tables:
        out += [markdown_table(header, [[c[0] for c in row] for row in rows], title=title), ""]
    return "\n".join(out)


def to_latex(tables: list[Table]) -> str:
    """LaTeX (booktabs): one ``table`` environment per table."""
    out = []
    for title, header, rows in tables:
        head = [tex_escape(h, only=_TEX_ONLY + "Δ") for h in header]
        out += [latex_table(head, [[c[1] for c in row] for row in rows], "l" + "c" * (len(header) - 1),
                            caption=_text(title)[1], placement="t", small=True), ""]
    return "\n".join(out)


def write_tables(result: dict[str, Any], params: RobustBenchParams, out_dir: Path) -> tuple[Path, Path]:
    """Write ``benchmark.md`` and ``benchmark.tex`` under ``out_dir``. Returns both paths."""
    tables = [retrieval_table(result, params, "t2a"), retrieval_table(result, params, "a2t"),
              drop_table(result, params), paired_table(result, params), zero_shot_table(result, params)]
    md, tex = out_dir / "benchmark.md", out_dir / "benchmark.tex"
    decision = result["register"]
    basis = f", on the {decision['basis']}" if decision.get("basis") else ""
    note = f"\nRegistration: {'yes' if decision['decision'] else 'no'}{basis} ({decision['reason']}).\n"
    with atomic_path(md) as tmp:
        tmp.write_text(to_markdown(tables) + note)
    with atomic_path(tex) as tmp:
        tmp.write_text(to_latex(tables))
    return md, tex
