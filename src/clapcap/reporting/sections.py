"""The report's sections on RobustCLAP and the real recordings (``llm_views``, ``pairwise``,
``real``, ``kinds``, ``views``, ``view_source``; schemas in :mod:`clapcap.reporting.report`),
and :class:`Section`, what every section builder returns. Kept apart from
:mod:`clapcap.reporting.report`, which assembles the report and builds the captioning sections.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clapcap.reporting import figures as figs
from clapcap.reporting.tables import Row, Table

# The report's order: the findings, then real recordings (the results a reader of the field
# can act on), then the studies on the generated corpus.
SECTIONS: dict[str, str] = {
    "findings": "Findings over training seeds",
    "real_corpus": "Real corpus: thousands of real recordings",
    "real": "Real recordings (no generator made them)",
    "lm_ablation": "Language-model ablation with noise floors",
    "arch_ablation": "Architecture ablation",
    "decoding_ablation": "Decoding ablation",
    "encoder_ablation": "Audio-encoder ablation",
    "reference_comparison": "Pipeline vs reference captioners",
    "lr_search": "Learning-rate search",
    "retrieval": "Retrieval in the AudioCaps text-to-audio leaderboard",
    "llm_views": "RobustCLAP views from a real LLM",
    "pairwise": "Pairwise A/B study with LLM judges",
    "vocab": "Vocabulary and length of generated captions",
    "kinds": "Which words hurt retrieval: sound events, attributes or structure",
    "views": "How many paraphrase views per caption",
    "view_source": "RobustCLAP trained on the LLM's views",
    "lr_check": "A fair learning rate per ablation row",
}


@dataclass
class Section:
    """What one section produced."""

    text: str = ""
    tables: dict[str, Table] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)  # name -> Figure
    copied: dict[str, str] = field(default_factory=dict)   # name -> PNG made elsewhere


def clips_label(config: dict[str, Any]) -> str:
    return "/".join(str(n) for n in config.get("n_clips", [])) or "?"


def llm_views_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    report, records = data["report"], data["records"]
    # Per split when the stage took a subset of several splits, else over all captions.
    splits = {k: v for k, v in report.get("subset", {}).get("splits", {}).items() if "acceptance" in v}
    groups = {f"{split}, ": v["acceptance"] for split, v in splits.items()} if len(splits) > 1 \
        else {"": report["acceptance"]}
    rows = [Row(name=f"{prefix}{view} ({acc[view]['n']})",
                values={k: float(acc[view][k]) for k in ("accepted_rate", "corrected_rate", "dropped_rate")},
                cells={"drop reasons": ", ".join(f"{r} {n}" for r, n in acc[view]["drop_reasons"].items())})
            for prefix, acc in groups.items() for view in acc]
    table = Table(SECTIONS["llm_views"], rows, ["accepted_rate", "corrected_rate", "dropped_rate"],
                  ["drop reasons"], bold=False,
                  notes=[f"{report['n_captions']} captions of {report['n_clips']} clips"
                         + "".join(f"; {split}: {v['n_captions']} of {v['n_clips']} clips" for split, v in splits.items())
                         + " (views per row in brackets); accepted: kept as "
                         "generated; corrected: rewritten by the correction pass; dropped: failed a step or a "
                         "mechanical check (null in the manifest)."])
    kept = [r for r in records if r["status"] != "dropped"][:3]
    dropped = [r for r in records if r["status"] == "dropped" and r["paraphrase"]][:3]
    lines = ["Examples (caption -> view):", ""]
    lines += [f"- {r['view']}, {r['status']}: \"{r['caption']}\" -> \"{r['paraphrase']}\"" for r in kept]
    lines += [f"- {r['view']}, dropped ({r['reason']}): \"{r['caption']}\" -> \"{r['paraphrase']}\""
              for r in dropped]
    return Section(text="\n".join(lines) + "\n", tables={"llm_views": table})


def pairwise_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    agreement, png = data["agreement"], data["png"]
    pref = agreement["preference"].get("all judges", {})
    rows = [Row(name=f"{system} ({v['votes']} votes)", values={k: float(v[k]) for k in ("rate", "ci_low", "ci_high")})
            for system, v in sorted(pref.items())]
    table = Table(SECTIONS["pairwise"], rows, ["rate", "ci_low", "ci_high"], bold=False,
                  notes=["Preference rate over the LLM judges that pass the gold pairs, each judgement "
                         "from both orders: (wins + ties/2) / judgements; 95 % percentile bootstrap "
                         "interval over clips."])
    kappa = agreement["agreement"] or {"fleiss": {}, "judge_vs_judge": {}}
    fleiss = ", ".join(f"{p} {v['kappa']:.3f}" if v["kappa"] is not None else f"{p} undefined"
                       for p, v in kappa["fleiss"].items()) or "none"
    cohen = [v["kappa"] for v in kappa["judge_vs_judge"].values() if v["kappa"] is not None]
    bias = ", ".join(f"{p} {v['first_shown_rate']:.2f}" for p, v in agreement["position_bias"].items()
                     if v["first_shown_rate"] is not None)
    failed = ", ".join(f"{c['pool']} {c['failures']} of {c['votes'] + c['failures']}" for c in agreement["judge_runs"])
    gold = agreement.get("gold", {})
    judges = "; ".join(f"{j}: gold accuracy {v['accuracy']:.2f} [{v['ci_low']:.2f}, {v['ci_high']:.2f}], "
                       f"{'passes' if v['passes'] else 'left out'}, orders agree on "
                       f"{agreement['order_consistency'][j]['consistency']:.2f} of items"
                       for j, v in sorted(gold.items()) if j in agreement.get("order_consistency", {})
                       and agreement["order_consistency"][j]["consistency"] is not None)
    text = (f"{agreement['n_items']} items with a judgement, {agreement['n_votes']} judgements "
            f"({agreement['n_human_votes']} human votes). "
            + (f"Judges on the gold pairs (chance 0.5): {judges}. " if judges else "")
            + f"Fleiss kappa within each counted judge pool: {fleiss}. Mean Cohen kappa over judge pairs: "
            + (f"{sum(cohen) / len(cohen):.3f} ({len(cohen)} pairs)" if cohen else "undefined")
            + f". Share of order votes for the caption shown first: {bias}. Asks with no usable answer "
            f"(asked again on every run): {failed}.\n")
    return Section(text=text, tables={"pairwise": table}, copied={"pairwise_preference": str(png)})


def real_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    bench, caps, info = data["benchmark"], data["captioning"], data["dataset"]
    k = next(iter(bench["chance"]))
    chance = bench["chance"][k]
    rows = [Row(name="chance", values={f"{b} {d}": chance[d] for b in bench["params"]["benchmarks"]
                                       for d in ("t2a", "a2t")})]
    bars: dict[str, list[tuple[str, float, float, float]]] = {f"t2a {k}, original captions": [],
                                                               f"a2t {k}, original captions": []}
    for name, res in bench["models"].items():
        rows.append(Row(name=name, values={f"{b} {d}": res[b][d][k] for b in bench["params"]["benchmarks"]
                                           for d in ("t2a", "a2t")}))
        for d in ("t2a", "a2t"):
            ci = res["original"][d]["ci"][k]
            bars[f"{d} {k}, original captions"].append((name, res["original"][d][k], ci["low"], ci["high"]))
    cols = [f"{b} {d}" for b in bench["params"]["benchmarks"] for d in ("t2a", "a2t")]
    retrieval = Table(f"{SECTIONS['real']}: retrieval {k}", rows, cols, bold=False,
                      notes=[f"{bench['n_clips']} clips; chance: a random ranking's expected {k} "
                             "(clapcap.experiments.real.recordings). Intervals and findings: results/real/."])
    metrics = ["cider_d", "meteor", "rouge_l", "bleu_1", "sbert_sim_minilm"]
    cap_rows, cap_bars = [], []
    for name, res in caps["systems"].items():
        cap_rows.append(Row(name=name, values={m: res["corpus"].get(m) for m in metrics}))
        if "sbert_sim_minilm" in res["ci"]:
            lo, hi = res["ci"]["sbert_sim_minilm"]
            cap_bars.append((name.split(" (")[0], res["corpus"]["sbert_sim_minilm"], lo, hi))
    unavailable = sorted({m for res in caps["systems"].values() for m in res["unavailable"]})
    captioning = Table(f"{SECTIONS['real']}: captioning", cap_rows, metrics,
                       notes=["Metrics unavailable offline: " + (", ".join(unavailable) or "none")
                              + " (their assets do not install from the registries)."])
    if cap_bars:
        bars["captioning sbert_sim_minilm"] = cap_bars
    fig = figs.interval_chart(bars, SECTIONS["real"], chance={g: chance[g.split()[0]] for g in bars
                                                              if g.split()[0] in chance})
    sources = ", ".join(f"{n} {c}" for n, c in info["by_source"].items())
    text = (f"{info['n_clips']} real clips ({sources}; {info['total_seconds']} s), captioned by rule from "
            f"their file names (docs/real.md); {len(info['dropped'])} left out by the duration limits. "
            "Every model here was trained on the synthetic corpus only.\n")
    return Section(text=text, tables={"real_retrieval": retrieval, "real_captioning": captioning},
                   figures={"real": fig})


def kinds_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    kinds = ["events", "attributes", "structure"]
    cols = ["original", *kinds]
    rows = [Row(name=name, values={k: res[k]["mean"] for k in cols}) for name, res in data["models"].items()]
    views = data["views"]
    table = Table(SECTIONS["kinds"], rows, cols, bold=False, notes=[
        f"Test t2a {data['metric'].split('/')[-1]} (mean over fine-tune seeds) with the test captions of "
        f"{views['clips']} event-sound clips ({data['n_queries']} queries; the {views['left_out_music']} music "
        "clips are left out) rewritten in only their sound-event words, only their attribute words, or only their "
        "sentence structure (docs/robust.md). Findings: robust.kinds.* in reports/conclusions.json."])
    bars = {f"{k} changed": [(name, res[k]["drop"], *res[k]["drop_ci"]) for name, res in data["models"].items()]
            for k in kinds}
    fig = figs.interval_chart(bars, f"Drop in t2a {data['metric'].split('/')[-1]} from the original captions "
                                    "(95 % interval over queries)")
    return Section(tables={"kinds": table}, figures={"kinds": fig})


def views_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    models = data["models"]
    benches = list(next(iter(models.values())))
    rows = [Row(name=name, values={b: res[b]["mean"] for b in benches}) for name, res in models.items()]
    table = Table(SECTIONS["views"], rows, benches, notes=[
        f"Test {data['metric']} per benchmark, mean over fine-tune seeds; one-view variants: "
        + ", ".join(f"{n} {o}" for n, o in data["variants"].items())
        + ". Findings: robust.views.* in reports/conclusions.json."])
    bars = {b: [(name, res[b]["mean"], min(res[b]["per_seed"].values()), max(res[b]["per_seed"].values()))
                for name, res in models.items()] for b in benches}
    fig = figs.interval_chart(bars, f"{SECTIONS['views']}: {data['metric']} (bars: range over seeds)")
    return Section(tables={"views": table}, figures={"views": fig})


def view_source_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    models, sub = data["models"], data["subset"]
    benches = list(next(iter(models.values())))
    rows = [Row(name=name, values={b: res[b]["mean"] for b in benches}) for name, res in models.items()]
    table = Table(SECTIONS["view_source"], rows, benches, notes=[
        f"Test {data['metric']} per benchmark, mean over fine-tune seeds {data['seeds']}. Every fine-tune trains on "
        f"the same {sub['n_captions']} captions of {sub['n_clips']} training clips (the LLM stage's subset; "
        f"{data['n_full_train_clips']} in the training split), {data['epochs']} epochs; views kept by both sources: "
        + ", ".join(f"{v} {n}" for v, n in sub["n_views"].items())
        + ". Findings: robust.view_source.* in reports/conclusions.json."])
    bars = {b: [(name, res[b]["mean"], min(res[b].get("per_seed", {"": res[b]["mean"]}).values()),
                 max(res[b].get("per_seed", {"": res[b]["mean"]}).values())) for name, res in models.items()]
            for b in benches}
    fig = figs.interval_chart(bars, f"{SECTIONS['view_source']}: {data['metric']} (bars: range over seeds)")
    return Section(tables={"view_source": table}, figures={"view_source": fig})
