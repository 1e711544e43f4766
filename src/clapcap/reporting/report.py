"""``build_report``: Markdown + LaTeX tables and PNG figures from result JSON files.

Sections (keys of ``inputs``; each value is a path or a list of paths, see
:mod:`clapcap.reporting.inputs` for the schemas):

- ``findings``: conclusions files (:mod:`clapcap.evaluation.conclusions`): every stated
  finding with its interval over training seeds and test items, and its verdict;
- ``lm_ablation``: per-LM rows (``seeds`` or ``metrics`` + ``std``); std = noise floor;
- ``arch_ablation``, ``decoding_ablation``: variants with ``group`` and one ``baseline``
  per group; deltas are compared with the group's noise floor from ``lm_ablation``;
- ``encoder_ablation``: encoder rows, one ``baseline`` per ``group`` (the encoders on all
  clips; the music study's encoders on the music clips);
- ``reference_comparison``: pipeline and reference captioners, leaky rows daggered;
- ``lr_search``: Optuna result JSONs or PNG pointers;
- ``retrieval``: our retrieval results (with ``dataset``), placed in the AudioCaps
  text-to-audio leaderboard;
- ``llm_views``: a real LLM's RobustCLAP views (``paraphrase_report.json``,
  ``view_records.json``): acceptance rates per view, drop reasons, examples;
- ``pairwise``: the pairwise study (``agreement.json``, ``preference.png``): preference rates
  with bootstrap intervals, Fleiss and Cohen kappas, position bias;
- ``real``: the real-recordings benchmark (``benchmark.json``, ``captioning/scores.json``, the
  dataset's ``dataset.json``): retrieval against chance and captioning, with a figure;
- ``vocab``: vocabulary and length of generated captions (``caption_vocab``'s ``vocab.json``);
- ``kinds``: RobustCLAP's drops when only event words, attribute words or structure change
  (``robust_kinds``' ``kinds.json``), with a figure;
- ``views``: RobustCLAP with one view per caption against two (``robust_views``' ``views.json``);
- ``view_source``: fine-tunes on the LLM's views, the lexicon's views of the same captions and
  no views (``robust_view_source``' ``view_source.json``);
- ``lr_check``: each architecture row's own LR search against the baseline's (``check.json`` files).

A section without inputs, or whose input files do not exist yet, says "not run".
Outputs in ``out_dir``: ``report.md``, ``report.tex``, ``report.json`` (what ran),
``tables/<section>.md|.tex`` and ``figures/*.png``.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clapcap.evaluation.conclusions import findings_markdown, load_conclusions
from clapcap.reporting import figures as figs
from clapcap.reporting.inputs import load_lr_search, load_table_input
from clapcap.reporting.leaderboard import load_leaderboard, our_row, place_in_leaderboard
from clapcap.reporting.real_corpus import real_corpus_section
from clapcap.reporting.sections import (
    SECTIONS,
    Section,
    clips_label,
    kinds_section,
    llm_views_section,
    pairwise_section,
    real_section,
    view_source_section,
    views_section,
)
from clapcap.reporting.tables import (
    Row,
    Table,
    metric_order,
    rows_from_records,
    to_latex,
    to_markdown,
)
from clapcap.retrieval.table import LEADERBOARD, metric
from clapcap.utils.io import atomic_path, read_json, write_json

logger = logging.getLogger(__name__)

# The finding an ablation row states, by section: captioning.<kind>.<lm>.<variant>.
_ABLATION_FINDINGS = {"arch_ablation": "arch", "decoding_ablation": "decoding"}


def _primary(data: Mapping[str, Any], metrics: Sequence[str]) -> str:
    return data.get("primary") or metrics[0]


def _lm_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    rows = data["rows"]
    metrics = metric_order(rows, data["metrics"])
    table_rows = rows_from_records(rows)
    for row, rec in zip(table_rows, rows, strict=True):
        row.cells["seeds"] = str(rec.get("n_seeds", "–"))
    table = Table(data["title"] or SECTIONS["lm_ablation"], table_rows, metrics,
                  ["seeds"], set(data["lower_is_better"]),
                  notes=["mean ± std over training seeds (split seed fixed); the std is each "
                         "model's own noise floor and does not transfer across models."])
    primary = _primary(data, metrics)
    fig = figs.bar_chart(rows, primary, f"{primary} by language model (±1σ over seeds)")
    return Section(tables={"lm_ablation": table}, figures={"lm_ablation": fig})


def _row_finding(key: str, row: Mapping[str, Any], base: Mapping[str, Any] | None,
                 findings: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The finding that compares ``row`` with its group's baseline ``base``, if one does.

    Architecture and decoding rows state ``captioning.<arch|decoding>.<lm>.<row>`` (A = the
    row); encoder rows ``captioning.music.<baseline>.vs_<row>`` on music clips, or
    ``captioning.encoder.default.vs_<row>`` on all clips (A = the baseline encoder).
    """
    group, name = str(row.get("group", "")), str(row["name"])
    if key == "encoder_ablation":
        enc, _, scope = name.partition(" (")
        if scope.startswith("music") and base is not None:
            return findings.get(f"captioning.music.{str(base['name']).partition(' (')[0]}.vs_{enc}")
        return findings.get(f"captioning.encoder.default.vs_{enc}")
    kind = _ABLATION_FINDINGS.get(key)
    if kind is None or not group:
        return None
    variant = name[len(group) + 1:] if name.startswith(group + " ") else name
    return findings.get(f"captioning.{kind}.{group}.{variant}")


def _ablation_section(key: str, data: dict[str, Any], ctx: dict[str, Any]) -> Section:
    """The rows' scores, and for each row that states a finding, that finding's effect, interval
    and verdict (reports/conclusions.json): one number and one interval convention for a
    comparison wherever the report shows it."""
    rows = data["rows"]
    metrics = metric_order(rows, data["metrics"])
    primary = _primary(data, metrics)
    findings = {f["id"]: f for f in ctx.get("findings") or []}
    baselines = {str(r.get("group", "")): r for r in rows if r.get("baseline")}
    shown = []
    for r in rows:
        r["role"] = "baseline" if r.get("baseline") else ""
        f = None if r.get("baseline") else _row_finding(key, r, baselines.get(str(r.get("group", ""))), findings)
        if f is None:
            r["finding"], r["effect [95 % CI]"], r["verdict"] = "", "", ("" if r.get("baseline") else "no finding")
            continue
        r["finding"] = f["id"]
        r["effect [95 % CI]"] = f"{f['effect']:+.3f} [{f['ci']['low']:+.3f}, {f['ci']['high']:+.3f}]"
        r["verdict"] = f["verdict"]
        shown.append(f)
    cols = ["role", "finding", "effect [95 % CI]", "verdict"]
    cols = ["group", *cols] if any(r.get("group") for r in rows) else cols
    table = Table(data["title"] or SECTIONS[key], rows_from_records(rows, cols), metrics, cols,
                  set(data["lower_is_better"]),
                  notes=["Scores: each row's own run (the first seed). effect [95 % CI] and verdict: the "
                         "named finding, as in the findings table (effect = A minus B of its claim; its seeds "
                         "and baseline; the interval over seeds and test items); no finding: the row states none."])
    out = Section(tables={key: table})
    out.figures[key] = (figs.findings_plot(shown, SECTIONS[key]) if shown
                        else figs.bar_chart(rows, primary, SECTIONS[key]))
    return out


def _reference_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    rows = data["rows"]
    for r in rows:
        r["kind"] = r.get("kind") or ("pipeline" if r.get("pipeline") else "reference")
    metrics = metric_order(rows, data["metrics"])
    table = Table(data["title"] or SECTIONS["reference_comparison"], rows_from_records(rows, ["kind"]), metrics,
                  ["kind"], set(data["lower_is_better"]),
                  notes=["Bold: best non-leaked row per metric."])
    primary = _primary(data, metrics)
    fig = figs.bar_chart(rows, primary, f"{primary}: pipeline vs reference captioners")
    return Section(tables={"reference_comparison": table}, figures={"reference_comparison": fig})


def _lr_section(studies: list[dict[str, Any]], _ctx: dict[str, Any]) -> Section:
    out = Section()
    lines = []
    for study in studies:
        slug = "lr_search_" + "".join(c if c.isalnum() or c in "-_" else "_" for c in study["name"])
        if "png" in study:
            out.copied[slug] = study["png"]
            lines.append(f"- {study['name']}: figure from {study['png']}")
            continue
        out.figures[slug] = figs.lr_search_plot(study)
        best = study.get("best_params") or {}
        lines.append(f"- {study['name']}: {len(study['trials'])} trials, selected "
                     f"{', '.join(f'{k}={v:g}' if isinstance(v, float) else f'{k}={v}' for k, v in best.items()) or '–'}")
    out.text = "\n".join(lines) + "\n"
    return out


def _retrieval_section(data: dict[str, Any], ctx: dict[str, Any]) -> Section:
    ours = [our_row(r["name"], r["metrics"], dataset=str(r.get("dataset", "unknown")),
                    unit=str(r.get("unit", "fraction")), protocol=str(r.get("protocol", "unspecified")))
            for r in data["rows"]]
    board = place_in_leaderboard(load_leaderboard(ctx.get("leaderboard_path")), ours)
    rows = []
    for _, b in board.iterrows():
        name = f"{b['model']} [clapcap]" + ("" if b["comparable"] else " ‡") if b["ours"] else b["model"]
        note = b["note"] if b["ours"] else ("R@5/R@10/mAP@10 read from unlabelled columns (unverified)"
                                            if not b["verified"] else "")
        # The leaderboard's columns are the table's keys without "@" (r1, r5, r10, map10).
        rows.append(Row(name=name, values={metric(k).label: b[k.replace("@", "")] for k in LEADERBOARD},
                        cells={"rank": str(b["rank"]), "protocol": b["protocol"],
                               "settings": str(b["settings"]), "date": str(b["date"]), "note": note}))
    notes = ["Published numbers in % from the leaderboard data file (each row keeps its source "
             "and protocol); rank = published rows with higher R@1, plus one; [clapcap] marks "
             "this project's results (a published model's own '(Ours)' is the source's label)."]
    if not all(r["comparable"] for r in ours):
        notes.append("‡ evaluated on our own corpus, not AudioCaps: not comparable with the "
                     "published rows.")
    table = Table(SECTIONS["retrieval"], rows, [metric(k).label for k in LEADERBOARD],
                  ["rank", "protocol", "settings", "date", "note"], digits=2, notes=notes, bold=False)
    return Section(tables={"retrieval_leaderboard": table},
                   figures={"retrieval_leaderboard": figs.leaderboard_plot(board)})


def _findings_section(findings: list[dict[str, Any]], _ctx: dict[str, Any]) -> Section:
    counts = {v: sum(f["verdict"] == v for f in findings) for v in ("holds", "within noise", "reversed")}
    note = (f"{len(findings)} findings: {counts['holds']} hold, {counts['within noise']} within noise, "
            f"{counts['reversed']} reversed. Interval: two-level bootstrap over training seeds and test "
            "items; `holds` also needs every seed's effect on the claimed side (docs/conclusions.md).\n\n")
    return Section(text=note + findings_markdown(findings),
                   figures={"findings": figs.findings_plot(findings, SECTIONS["findings"])})


def _vocab_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    refs, configs = data["references"], data["configs"]
    stats = ["vocab", "mean_words", "distinct_ratio", "vocab_precision"]
    rows = [Row(name=f"references ({refs['n_captions']} captions)",
                values={"vocab": refs["vocab"], "mean_words": refs["mean_words"]})]
    rows += [Row(name=f"{name} ({c['n_seeds']} seeds, {clips_label(c)} clips)", values={s: c[s]["mean"] for s in stats},
                 std={s: c[s]["std"] for s in stats if c[s]["std"] is not None})
             for name, c in configs.items()]
    rows += [Row(name=f"{name} ({r['n_clips']} clips)", values={s: r[s] for s in stats}) for name, r in data["runs"].items()
             if not any(name == n or name.startswith(n) for n in configs) and "seed" not in name]
    table = Table(SECTIONS["vocab"], rows, stats, bold=False, notes=[
        "vocab: distinct words over all test captions (aac-metrics' vocab; words lower-cased, split "
        "on non-letters); vocab_precision: share of them the references use; distinct_ratio: distinct "
        f"captions over clips. One reference per clip has {refs['vocab_single']:.0f} words of vocabulary "
        "on average. Mean ± sample std over training seeds. SPIDEr-FL is not computed: its fluency-error "
        "checkpoint (FENSE's) does not install offline, nor does SPICE's CoreNLP."])
    main = {n: c for n, c in configs.items() if not n.startswith("decoding/")}
    bars = {"vocabulary (distinct words)": [(f"{n} ({clips_label(c)})", c["vocab"]["mean"], c["vocab"]["mean"] - (c["vocab"]["std"] or 0.0),
                                             c["vocab"]["mean"] + (c["vocab"]["std"] or 0.0)) for n, c in main.items()]}
    fig = figs.interval_chart(bars, SECTIONS["vocab"] + " (±1 std over seeds)",
                              chance={"vocabulary (distinct words)": refs["vocab_single"]},
                              line_label="one reference per clip")
    return Section(tables={"vocab": table}, figures={"vocab": fig} if main else {})


def _lr_check_section(data: list[dict[str, Any]], _ctx: dict[str, Any]) -> Section:
    rows = []
    for rec in data:
        c, b = rec["chosen"], rec["baseline"]
        rows.append(Row(name=rec["row"], values={
            "stage1 regret (rel.)": rec["stage1_regret_rel"], "stage2 regret (rel.)": rec["stage2_regret_rel"]},
            cells={"stage-1 LR (row / baseline)": f"{c['stage1_lr_projection']:g} / {b['stage1_lr_projection']:g}",
                   "stage-2 LRs (row / baseline)": f"{c['stage2_lr_projection']:g}, {c['stage2_lr_lm']:g} / "
                                                   f"{b['stage2_lr_projection']:g}, {b['stage2_lr_lm']:g}"}))
    same = sum(r["same_stage1"] and r["same_stage2"] for r in data)
    table = Table(SECTIONS["lr_check"], rows, ["stage1 regret (rel.)", "stage2 regret (rel.)"],
                  ["stage-1 LR (row / baseline)", "stage-2 LRs (row / baseline)"], bold=False, digits=4, notes=[
                      "Each architecture row's own LR search (the baseline's grid, epochs and seed). Regret: the "
                      "row's validation loss at the baseline's LR minus its best on the grid, over its best; "
                      "stage 2 only when both chose the same stage-1 LR (docs/captioning.md)."])
    text = f"{same} of {len(data)} architecture rows choose exactly the baseline's learning rates.\n"
    return Section(text=text, tables={"lr_check": table})


def _load(key: str, paths: Sequence[str | Path]) -> Any:
    if key == "llm_views":
        return {"report": read_json(paths[0]), "records": read_json(paths[1])}
    if key == "pairwise":
        return {"agreement": read_json(paths[0]), "png": paths[1]}
    if key == "real":
        return {"benchmark": read_json(paths[0]), "captioning": read_json(paths[1]), "dataset": read_json(paths[2])}
    if key in ("vocab", "kinds", "views", "view_source", "real_corpus"):
        return read_json(paths[0])
    if key == "lr_check":
        return [read_json(p) for p in paths]
    if key == "findings":
        return [f for p in paths for f in load_conclusions(p).values()]
    return load_lr_search(paths) if key == "lr_search" else load_table_input(paths)


def _build_section(key: str, data: Any, ctx: dict[str, Any]) -> Section:
    if key == "findings":
        return _findings_section(data, ctx)
    if key == "lm_ablation":
        return _lm_section(data, ctx)
    if key in ("arch_ablation", "decoding_ablation", "encoder_ablation"):
        return _ablation_section(key, data, ctx)
    if key == "reference_comparison":
        return _reference_section(data, ctx)
    if key == "lr_search":
        return _lr_section(data, ctx)
    if key == "llm_views":
        return llm_views_section(data, ctx)
    if key == "pairwise":
        return pairwise_section(data, ctx)
    if key == "real":
        return real_section(data, ctx)
    if key == "real_corpus":
        return real_corpus_section(data, ctx)
    if key == "vocab":
        return _vocab_section(data, ctx)
    if key == "kinds":
        return kinds_section(data, ctx)
    if key == "views":
        return views_section(data, ctx)
    if key == "view_source":
        return view_source_section(data, ctx)
    if key == "lr_check":
        return _lr_check_section(data, ctx)
    return _retrieval_section(data, ctx)


def as_paths(value: Any) -> list[Path]:
    if value is None:
        return []
    return [Path(value)] if isinstance(value, (str, Path)) else [Path(v) for v in value]


def _write_section(key: str, section: Section, out_dir: Path,
                   on_figure: Callable[[Any, str], None] | None) -> tuple[str, str, list[str]]:
    """Write a section's tables and figures; return its Markdown, LaTeX and file list."""
    md, tex, files = [section.text] if section.text else [], [], []
    for name, table in section.tables.items():
        for suffix, text in ((".md", to_markdown(table)), (".tex", to_latex(table, f"tab:{name}"))):
            path = out_dir / "tables" / f"{name}{suffix}"
            with atomic_path(path) as tmp:
                tmp.write_text(text)
            files.append(str(path.relative_to(out_dir)))
        md.append(to_markdown(table, heading=False))
        tex.append(to_latex(table, f"tab:{name}"))
    pngs = dict(section.copied)
    for name, fig in section.figures.items():
        path = out_dir / "figures" / f"{name}.png"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=120)
        if on_figure is not None:
            on_figure(fig, f"figures/{name}.png")
        figs.close(fig)
        pngs[name] = str(path)
    for name, src in section.copied.items():
        dest = out_dir / "figures" / f"{name}.png"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        pngs[name] = str(dest)
    for name, path in pngs.items():
        rel = str(Path(path).relative_to(out_dir))
        files.append(rel)
        md.append(f"![{name}]({rel})\n")
        tex.append("\\begin{figure}[ht]\\centering\\includegraphics[width=0.9\\linewidth]"
                   f"{{{rel}}}\\caption{{{SECTIONS[key]}}}\\end{{figure}}\n")
    return "\n".join(md), "\n".join(tex), files


def _collect(inputs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Load every section's inputs; returns (data by section, 'not run' reason by section)."""
    unknown = sorted(set(inputs) - set(SECTIONS))
    if unknown:
        raise ValueError(f"unknown report section(s) {unknown}; expected some of {list(SECTIONS)}")
    data, skipped = {}, {}
    for key in SECTIONS:
        paths = as_paths(inputs.get(key))
        present = [p for p in paths if p.is_file()]
        if not present:
            skipped[key] = "no input given" if not paths else f"input not found: {', '.join(map(str, paths))}"
            continue
        if len(present) < len(paths):
            logger.warning("%s: missing inputs %s", key, [str(p) for p in paths if not p.is_file()])
        data[key] = _load(key, present)
    return data, skipped


def build_report(inputs: Mapping[str, Any], out_dir: str | Path, *,
                 leaderboard_path: str | Path | None = None,
                 on_figure: Callable[[Any, str], None] | None = None) -> dict[str, Any]:
    """Build the report from whichever inputs exist.

    Args:
        inputs: ``{section: path | [paths]}`` (sections in :data:`SECTIONS`).
        out_dir: output folder.
        leaderboard_path: converted leaderboard CSV (the packaged one by default).
        on_figure: called with each figure and its report-relative PNG path before the figure
            is closed (:mod:`clapcap.tracked.report` logs them to MLflow).

    Returns:
        The summary written to ``report.json``: ``{"sections": {key: {"status", "reason",
        "inputs", "files"}}}``.

    Raises:
        ValueError: on an unknown section or an input that breaks its schema (naming the
            file and row).
        FileNotFoundError: when a referenced figure or the leaderboard file is missing.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data, skipped = _collect(inputs)
    return _render(data, skipped, out_dir, leaderboard_path, on_figure=on_figure)


def _render(data: dict[str, Any], skipped: dict[str, str], out_dir: Path,
            leaderboard_path: str | Path | None, *, on_figure: Callable[[Any, str], None] | None) -> dict[str, Any]:
    ctx: dict[str, Any] = {"leaderboard_path": leaderboard_path, **data}
    md = ["# clapcap report", ""]
    tex = ["% clapcap report tables and figures (generated; \\usepackage{booktabs,graphicx})", ""]
    summary: dict[str, Any] = {"sections": {}}
    for key, title in SECTIONS.items():
        md.append(f"## {title}\n")
        if key in skipped:
            md.append(f"_Not run_ ({skipped[key]}).\n")
            tex.append(f"% {title}: not run ({skipped[key]})\n")
            summary["sections"][key] = {"status": "not run", "reason": skipped[key], "files": []}
            continue
        section = _build_section(key, data[key], ctx)
        sec_md, sec_tex, files = _write_section(key, section, out_dir, on_figure)
        md.append(sec_md)
        tex.append(f"% {title}\n{sec_tex}")
        sources = data[key].get("sources") if isinstance(data[key], dict) else None
        summary["sections"][key] = {"status": "ok", "inputs": sources, "files": files}
    for name, text in (("report.md", "\n".join(md)), ("report.tex", "\n".join(tex))):
        with atomic_path(out_dir / name) as tmp:
            tmp.write_text(text)
    write_json(out_dir / "report.json", summary)
    ran = [k for k, v in summary["sections"].items() if v["status"] == "ok"]
    logger.info("report in %s: ran %s; not run %s", out_dir, ran, sorted(skipped))
    return summary
