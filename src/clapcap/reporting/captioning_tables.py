"""Summary tables of the captioning study (Markdown and LaTeX) from its result files.

Every ablation row shows its test metrics (with ``sbert_sim_minilm`` from
``sbert_sim_minilm.json`` when that file exists) and the change of the primary metric against
its baseline: the LM's noise-floor mean for LM, architecture and decoding rows, the
default encoder for encoder rows. A change within two noise-floor standard deviations of
that LM is marked as noise (``~``), since each model is judged against its own floor.

A second table sets each LM's noise floor against the trivial baseline (the most common
training caption), metric by metric: the margin is ``mean - baseline``, and it is called
**clear** when every seed beats the baseline and the margin exceeds ``NOISE_K`` noise-floor
standard deviations.
"""

from __future__ import annotations

import logging
import statistics
from pathlib import Path
from typing import Any

from clapcap.reporting.tables import latex_table, markdown_table, tex_escape
from clapcap.utils.io import atomic_path, read_json, write_json
from clapcap.utils.skip import skip_reason

logger = logging.getLogger(__name__)

NOISE_K = 2.0
# This summary escapes fewer LaTeX characters than the report's tables ($ { } ^ † ‡ kept as
# given) and writes the noise marker ``~`` as ``$\sim$``; kept so its files stay unchanged.
_TEX_ONLY = "\\_%&#±~Δ"
_TEX_OVERRIDES = {"~": r"$\sim$"}


def _floor(out: Path, lm: str) -> dict[str, Any] | None:
    path = out / "noise_floor" / f"{lm}.json"
    return read_json(path) if path.is_file() else None


def _row(group: str, name: str, lm: str, metrics: dict[str, float], **extra: Any) -> dict[str, Any]:
    return {"group": group, "name": name, "lm": lm, "metrics": metrics, **extra}


SEMANTIC = "sbert_sim_minilm"  # scored apart from the runs (clapcap.experiments.captioning.scores)


def _semantic(out: Path) -> dict[str, Any]:
    path = out / f"{SEMANTIC}.json"
    return read_json(path) if path.is_file() else {"runs": {}, "configs": {}}


def _with(metrics: dict[str, float], value: float | None) -> dict[str, float]:
    return metrics if value is None else {**metrics, SEMANTIC: value}


def _collect(out: Path, decoding_seed: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    sem = _semantic(out)
    if (out / "baseline_trivial.json").is_file():
        rows.append(_row("baseline", "most common train caption", "-", read_json(out / "baseline_trivial.json")["test"]["corpus"]))
    for path in sorted(out.glob("noise_floor/*.json")):
        floor = read_json(path)
        cfg = sem["configs"].get(floor["lm"], {})
        how = ("pretrained" if floor.get("pretrained") else "from scratch") + (
            ", stage 1 only" if floor.get("stages") == [1] else "")
        rows.append(_row("lm", f"{floor['lm']} ({how}; mean of {len(floor['seeds'])} seeds)", floor["lm"],
                         _with({m: v["mean"] for m, v in floor["metrics"].items()}, cfg.get("mean")),
                         std=_with({m: v["std"] for m, v in floor["metrics"].items()}, cfg.get("std"))))
    encoders: dict[tuple[str, str], list[dict[str, float]]] = {}
    for path in sorted(out.glob("results/[!.]*.json")):
        if skip_reason(path) is not None:  # a run that does not apply to this dataset
            continue
        rec = read_json(path)
        kind = rec["spec"]["kind"]
        if kind == "arch":
            overrides = rec["spec"]["model_overrides"]
            label = ", ".join(f"{k}={v}" for k, v in overrides.items()) or rec["spec"]["name"]
            run = sem["runs"].get(rec["spec"]["name"], {})
            rows.append(_row(kind, label, rec["spec"]["lm"], _with(rec["test"]["corpus"], run.get("corpus"))))
        elif kind in ("encoder", "music"):  # one row per encoder: the mean over its training seeds
            label = rec["spec"]["name"].removeprefix(f"{kind}_").split(f"_{rec['spec']['lm']}_s1")[0]
            run = sem["runs"].get(rec["spec"]["name"], {})
            encoders.setdefault((kind, label, rec["spec"]["lm"]), []).append(
                _with(rec["test"]["corpus"], run.get("corpus")))
    for (kind, label, lm), runs in encoders.items():
        metrics = {m: statistics.fmean(r[m] for r in runs) for m in runs[0] if all(m in r for r in runs)}
        name = label if len(runs) == 1 else f"{label} (mean of {len(runs)} seeds)"
        rows.append(_row(kind, name, lm, metrics, encoder=label))
    for path in sorted(out.glob(f"decoding/*/seed{decoding_seed}/[!.]*.json")):
        if not path.name.endswith(".predictions.json"):
            rec = read_json(path)
            run = sem["runs"].get(f"decoding/{rec['lm']}/seed{decoding_seed}/{rec['name']}", {})
            rows.append(_row("decoding", rec["name"], rec["lm"], _with(rec["test"]["corpus"], run.get("corpus"))))
    return rows


def build_summary(out_dir: str | Path, decoding_seed: int = 0, music_baseline: str = "synth_clap") -> dict[str, Any]:
    """Collect rows and compare each to its baseline (decoding rows: the configs evaluated on
    the checkpoint of noise seed ``decoding_seed``, ``decoding/<lm>/seed<k>/``; music rows,
    stage-1 runs on the music subset: the ``music_baseline`` encoder).

    Returns:
        ``{"primary", "metrics", "rows": [{"group", "name", "lm", "metrics", "delta",
        "noise_std", "within_noise"}]}``.
    """
    out = Path(out_dir)
    rows = _collect(out, decoding_seed)
    metrics = sorted({m for r in rows for m in r["metrics"]})
    primary = next((read_json(p)["test"].get("primary") for p in sorted(out.glob("results/[!.]*.json"))), None)
    primary = primary or ("fense" if "fense" in metrics else "cider_d")
    floors = {r["lm"]: r for r in rows if r["group"] == "lm"}
    refs = {"encoder": next((r for r in rows if r["group"] == "encoder" and r.get("encoder") == "default"), None),
            "music": next((r for r in rows if r["group"] == "music" and r.get("encoder") == music_baseline), None)}
    for r in rows:
        ref = refs[r["group"]] if r["group"] in refs else floors.get(r["lm"])
        std = floors.get(r["lm"], {}).get("std", {}).get(primary)
        r["delta"] = None
        r["noise_std"] = std
        r["within_noise"] = None
        if ref is not None and ref is not r and primary in r["metrics"] and primary in ref["metrics"]:
            r["delta"] = r["metrics"][primary] - ref["metrics"][primary]
            if std is not None and r["group"] not in refs:
                r["within_noise"] = abs(r["delta"]) <= NOISE_K * std
    return {"primary": primary, "metrics": metrics, "rows": rows, "vs_baseline": baseline_margins(out)}


def baseline_margins(out_dir: str | Path) -> list[dict[str, Any]]:
    """Each LM's noise floor against the trivial baseline, for every metric both have.

    Returns:
        ``[{"lm", "metric", "mean", "std", "min", "baseline", "margin", "relative", "clear"}]``
        (empty without a baseline file). ``clear``: every seed > baseline and
        ``margin > NOISE_K * std``.
    """
    out = Path(out_dir)
    if not (out / "baseline_trivial.json").is_file():
        return []
    base = read_json(out / "baseline_trivial.json")["test"]["corpus"]
    found = []
    for path in sorted(out.glob("noise_floor/*.json")):
        floor = read_json(path)
        for metric, stats in sorted(floor["metrics"].items()):
            if metric not in base:
                continue
            margin = stats["mean"] - base[metric]
            found.append({"lm": floor["lm"], "metric": metric, "mean": stats["mean"], "std": stats["std"],
                          "min": min(stats["values"]), "baseline": base[metric], "margin": margin,
                          "relative": margin / base[metric] if base[metric] else None,
                          "clear": min(stats["values"]) > base[metric] and margin > NOISE_K * stats["std"]})
    return found


def _margin_lines(summary: dict[str, Any]) -> list[str]:
    rows = summary.get("vs_baseline") or []
    if not rows:
        return []
    head = ["LM", "metric", "mean ± std (seeds)", "worst seed", "baseline", "margin", "clear"]
    cells = []
    for r in rows:
        rel = f" ({r['relative']:+.0%})" if r["relative"] is not None else ""
        cells.append([r["lm"], r["metric"], f"{r['mean']:.3f} ± {r['std']:.3f}", f"{r['min']:.3f}",
                      f"{r['baseline']:.3f}", f"{r['margin']:+.3f}{rel}", "yes" if r["clear"] else "no"])
    return ["", "Against the trivial baseline (most common training caption), test split:", "",
            markdown_table(head, cells),
            f"\nclear: every seed beats the baseline and the margin exceeds {NOISE_K:g} noise-floor std."]


def _cell(value: float | None, std: float | None = None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" + (f" ± {std:.3f}" if std is not None else "")


def _delta(row: dict[str, Any]) -> str:
    if row["delta"] is None:
        return "-"
    return f"{row['delta']:+.3f}" + (" ~" if row["within_noise"] else "")


def _body(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    metrics = summary["metrics"]
    head = ["group", "config", "LM", *metrics, f"Δ {summary['primary']}"]
    rows = []
    for r in summary["rows"]:
        std = r.get("std", {})
        cells = [_cell(r["metrics"].get(m), std.get(m)) for m in metrics]
        rows.append([r["group"], r["name"], r["lm"], *cells, _delta(r)])
    return head, rows


def to_markdown(summary: dict[str, Any]) -> str:
    """The summary as a Markdown table."""
    head, rows = _body(summary)
    note = (f"\nΔ: change of {summary['primary']} against the LM's noise-floor mean (encoder rows: "
            f"against the default encoder; music rows, stage-1 runs on the music clips only: against "
            f"the general CLAP on the same clips); `~` marks a change within {NOISE_K:g} noise-floor std.\n")
    return markdown_table(head, rows) + "\n" + note + "\n".join(_margin_lines(summary)) + "\n"


def _tex(text: str) -> str:
    return tex_escape(text, only=_TEX_ONLY, overrides=_TEX_OVERRIDES)


def to_latex(summary: dict[str, Any]) -> str:
    """The summary as a LaTeX ``tabular`` (booktabs)."""
    head, rows = _body(summary)
    spec = "lll" + "r" * (len(summary["metrics"]) + 1)
    return latex_table([_tex(h) for h in head], [[_tex(c) for c in row] for row in rows], spec) + "\n"


def write_summary(out_dir: str | Path, report_dir: str | Path | None = None, *,
                  decoding_seed: int = 0) -> dict[str, Path]:
    """Write ``summary.md``, ``summary.tex`` and ``summary.json`` into ``report_dir`` (default ``out_dir``).

    Returns:
        The written paths by format.
    """
    summary = build_summary(out_dir, decoding_seed)
    dest = Path(report_dir or out_dir)
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in (("summary.md", to_markdown(summary)), ("summary.tex", to_latex(summary))):
        with atomic_path(dest / name) as tmp:
            tmp.write_text(text)
    write_json(dest / "summary.json", summary)
    return {"md": dest / "summary.md", "tex": dest / "summary.tex", "json": dest / "summary.json"}
