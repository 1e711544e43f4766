"""Report figures (matplotlib, Agg backend). Each function returns a Figure; callers save it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend chosen first)
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

_OURS = "#d62728"
_PROTOCOL_COLOURS = {"fine-tuned": "#1f77b4", "zero-shot": "#2ca02c", "unspecified": "#9e9e9e"}


def bar_chart(rows: Sequence[Mapping[str, Any]], metric: str, title: str) -> Figure:
    """Bars of ``metric`` per row with ``std`` error bars; leaky rows hatched and daggered."""
    names = [r["name"] + ("†" if r.get("leaky") else "") for r in rows]
    values = [r["metrics"].get(metric) for r in rows]
    values = [math.nan if v is None else v for v in values]
    errors = [(r.get("std") or {}).get(metric, 0.0) for r in rows]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.7 * len(rows) + 2), 3.6))
    yerr = errors if any(e for e in errors) else None  # no zero-height error caps
    bars = ax.bar(range(len(rows)), values, yerr=yerr, capsize=3, color="#4c72b0")
    for bar, row in zip(bars, rows, strict=True):
        if row.get("leaky"):
            bar.set_hatch("//")
            bar.set_facecolor("#bbbbbb")
    ax.set_xticks(range(len(rows)), names, rotation=30, ha="right")
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


_VERDICT_COLOURS = {"holds": "#55a868", "within noise": "#8c8c8c", "reversed": "#c44e52"}


def findings_plot(findings: Sequence[Mapping[str, Any]], title: str) -> Figure:
    """Each finding's effect with its 95 % interval over seeds and items, coloured by verdict:
    one panel per metric, so effects on different scales (CIDEr-D, R@10) never share an axis.

    One row per finding (its id on the y axis); the dashed line is 0, so a "greater" claim
    holds where the whole bar sits right of it.
    """
    by_metric: dict[str, list[Mapping[str, Any]]] = {}
    for f in findings:
        by_metric.setdefault(str(f.get("metric", "effect")), []).append(f)
    heights = [len(v) + 1.2 for v in by_metric.values()] or [1.0]
    fig, axes = plt.subplots(len(heights), 1, squeeze=False, gridspec_kw={"height_ratios": heights},
                             figsize=(7.5, 0.3 * sum(heights) + 0.9 * len(heights) + 0.6))
    for ax, (metric, group) in zip(axes[:, 0], by_metric.items(), strict=False):
        for i, f in enumerate(group):
            colour = _VERDICT_COLOURS.get(f["verdict"], "#4c72b0")
            ax.plot([f["ci"]["low"], f["ci"]["high"]], [i, i], color=colour, linewidth=2.2)
            ax.plot([f["effect"]], [i], "o", color=colour, markersize=4)
        ax.axvline(0.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_yticks(range(len(group)), [f["id"] for f in group], fontsize=7)
        ax.set_ylim(len(group) - 0.5, -0.5)
        ax.set_xlabel(f"{metric} effect (A - B), 95 % interval over seeds and test items", fontsize=8)
    handles = [plt.Line2D([], [], color=c, linewidth=2.2, label=v) for v, c in _VERDICT_COLOURS.items()]
    axes[0, 0].legend(handles=handles, fontsize=7, loc="lower right")
    axes[0, 0].set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _search_axis(trials: Sequence[Mapping[str, Any]], param: str | None) -> str:
    if param:
        return param
    names = [k for k, v in trials[0]["params"].items() if isinstance(v, (int, float))]
    return "lr" if "lr" in names else (names[0] if names else "trial")


def lr_search_plot(study: Mapping[str, Any], param: str | None = None) -> Figure:
    """Objective value against the searched parameter (log x), the best trial starred."""
    trials = [t for t in study["trials"] if t.get("value") is not None]
    axis = _search_axis(study["trials"], param)
    xs = [t["params"].get(axis, i) for i, t in enumerate(trials)]
    ys = [t["value"] for t in trials]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.scatter(xs, ys, color="#4c72b0", label="trials")
    best = study.get("best_params", {}).get(axis)
    if best is None and ys:
        pick = min if study.get("direction", "maximize") == "minimize" else max
        best = xs[ys.index(pick(ys))]
    best_ys = [y for x, y in zip(xs, ys, strict=True) if x == best]
    if best_ys:
        ax.scatter([best], [best_ys[0]], marker="*", s=220, color=_OURS, label="selected", zorder=3)
    if xs and all(isinstance(x, (int, float)) and x > 0 for x in xs) and axis != "trial":
        ax.set_xscale("log")
    ax.set_xlabel(axis)
    ax.set_ylabel(study.get("metric", "objective"))
    ax.set_title(f"LR search: {study['name']}")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def leaderboard_plot(board: pd.DataFrame, top: int = 30) -> Figure:
    """Horizontal R@1 bars: published rows by protocol colour, ours in red (hatched if not
    comparable). Shows the ``top`` published rows plus all of ours."""
    keep = board[board["ours"] | (board.index < top)]
    fig, ax = plt.subplots(figsize=(7, 0.24 * len(keep) + 1.2))
    labels, colours, hatches = [], [], []
    for _, row in keep.iterrows():
        ours = bool(row["ours"])
        labels.append(f"{row['model']} [clapcap]" + ("" if row["comparable"] else " ‡") if ours
                      else f"{row['model']} [{row['protocol']}]")
        colours.append(_OURS if ours else _PROTOCOL_COLOURS.get(row["protocol"], "#9e9e9e"))
        hatches.append("//" if ours and not row["comparable"] else "")
    y = range(len(keep))[::-1]
    bars = ax.barh(list(y), keep["r1"].to_numpy(), color=colours)
    for bar, hatch in zip(bars, hatches, strict=True):
        bar.set_hatch(hatch)
    ax.set_yticks(list(y), labels, fontsize=7)
    ax.set_xlabel("text-to-audio R@1 (%)")
    ax.set_title("AudioCaps text-to-audio leaderboard\n"
                 "(red: clapcap; ‡ hatched: not AudioCaps, not comparable)", fontsize=9)
    fig.tight_layout()
    return fig


def interval_chart(groups: Mapping[str, Sequence[tuple[str, float, float, float]]], title: str,
                   chance: Mapping[str, float] | None = None, line_label: str = "chance") -> Figure:
    """One panel per group: a bar per ``(name, value, low, high)`` with its interval, and a
    dashed line at the group's level in ``chance`` (labelled ``line_label``) where it has one."""
    width = max(4.2 if len(groups) > 1 else 6.4, 0.45 * max(len(b) for b in groups.values()))
    fig, axes = plt.subplots(1, len(groups), figsize=(width * len(groups), 3.6), squeeze=False)
    for ax, (group, bars) in zip(axes[0], groups.items(), strict=True):
        names = [b[0] for b in bars]
        values = [b[1] for b in bars]
        # Clipped at 0: a percentile interval may, rarely, not contain the point estimate.
        err = [[max(0.0, b[1] - b[2]) for b in bars], [max(0.0, b[3] - b[1]) for b in bars]]
        ax.bar(range(len(bars)), values, yerr=err, capsize=4, color="#4878a8")
        if chance and group in chance:
            ax.axhline(chance[group], ls="--", color="#c44e52", label=f"{line_label} {chance[group]:.3g}")
            ax.legend(fontsize=8)
        ax.set_xticks(range(len(bars)), names, rotation=20, ha="right", fontsize=8)
        ax.set_title(group, fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def close(fig: Figure) -> None:
    """Release a figure's memory."""
    plt.close(fig)
