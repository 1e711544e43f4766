"""The report's real-corpus section: the thousands of real recordings of ``prepare_real_corpus``
(docs/corpus.md), with the tower CLAP, RobustCLAP on it and the captioning study.

:func:`collect_real_corpus` (the ``report`` stage's collect step) reads the studies' output
files and writes one input, ``real_corpus.json``:

- ``clap``: the tower CLAP's test retrieval (``results/real_clap/metrics.json``: t2a and a2t
  R@1, R@10 and mAP@10 with their intervals, chance);
- ``robust``: RobustCLAP's summary (``results/real_robust/summary.json``: t2a R@10 per system on
  the original captions, view 2 and the held-out view);
- ``captioning``: every captioning configuration of ``results/real_captioning/results`` with the
  mean and sample std over its training seeds of each metric, and the reference captioners
  and the caption overlap of ``references/scores.json``.

:func:`real_corpus_section` renders them as three tables and one figure (test CIDEr-D per
captioning configuration, ±1 std over seeds, the reference captioners as lines).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

from clapcap.reporting import figures as figs
from clapcap.reporting.sections import SECTIONS, Section
from clapcap.reporting.tables import Row, Table
from clapcap.utils.io import read_json

TITLE = SECTIONS["real_corpus"]
CAPTION_METRICS = ["cider_d", "meteor", "rouge_l", "bleu_1", "bleu_4"]
_SEED = re.compile(r"^(?P<config>.+)_seed(?P<seed>\d+)$")


def caption_configs(results_dir: str | Path, *, subsets: bool = False) -> dict[str, dict[str, Any]]:
    """Configuration (a run's name without ``_seed<k>``) -> its seeds and, per metric of the
    test corpus scores, the mean and sample std over them (std None for one seed); the LM
    rows first, then the ``encoder_*`` rows. ``subsets``: the ``subset_*`` runs instead (the
    specialists', each on its own subset's test clips), which the others leave out."""
    runs: dict[str, dict[int, dict[str, float]]] = {}
    for path in sorted(Path(results_dir).glob("*.json")):
        found = _SEED.match(path.stem)
        if found and found["config"].startswith("subset_") == subsets:
            runs.setdefault(found["config"], {})[int(found["seed"])] = read_json(path)["test"]["corpus"]
    out = {}
    # The LM rows first, then the encoder rows.
    for config, by_seed in sorted(runs.items(), key=lambda kv: (kv[0].startswith("encoder_"), kv[0])):
        seeds = sorted(by_seed)
        stats = {}
        for m in CAPTION_METRICS:
            values = [by_seed[s][m] for s in seeds if isinstance(by_seed[s].get(m), (int, float))]
            if values:
                stats[m] = {"mean": statistics.fmean(values),
                            "std": statistics.stdev(values) if len(values) > 1 else None}
        out[config] = {"seeds": seeds, "metrics": stats}
    return out


def collect_real_corpus(clap: str | Path, robust: str | Path, captioning: str | Path) -> dict[str, Any] | None:
    """The section's input from the three studies' outputs (module docstring), or None when
    one of them has not run."""
    scores = Path(captioning) / "references" / "scores.json"
    if not (Path(clap).is_file() and Path(robust).is_file() and scores.is_file()):
        return None
    metrics, refs = read_json(clap), read_json(scores)
    test = metrics["test"]
    retrieval = {name: test[name] for name in ("tower_clap", "class_route", "yamnet_names", "untrained_heads")
                 if name in test}
    overlap = refs["overlap"]
    specialists = caption_configs(Path(captioning) / "results", subsets=True)
    return {"clap": {"clips": test["clips"], "chance": test["chance"], "models": retrieval},
            **({"specialists": specialists} if specialists else {}),
            "robust": read_json(robust),
            "captioning": {"configs": caption_configs(Path(captioning) / "results"),
                           "references": {n: refs["systems"][n]["corpus"] for n in ("retrieval", "labels")
                                          if n in refs["systems"]},
                           "n_test_clips": refs["n_test_clips"],
                           "overlapping_clips": overlap["clips_with_a_training_caption"],
                           "overlap": {n: {k: s[k] for k in ("overlapping_mean", "other_mean", "verdict")}
                                       for n, s in overlap["systems"].items()}}}


def _retrieval_table(clap: dict[str, Any]) -> Table:
    cols = [f"{d} {k}" for d in ("t2a", "a2t") for k in ("r@1", "r@10", "map@10")]
    rows = [Row(name="chance", values={f"{d} {k}": clap["chance"][k][d] for d in ("t2a", "a2t")
                                       for k in ("r@1", "r@10") if k in clap["chance"]})]
    for name, res in clap["models"].items():
        rows.append(Row(name=name, values={f"{d} {k}": res[d][k]["value"] for d in ("t2a", "a2t")
                                           for k in ("r@1", "r@10", "map@10") if k in res[d]}))
    return Table(f"{TITLE}: retrieval", rows, cols, notes=[
        f"{clap['clips']} test clips of the cross-source split; the tower CLAP (frozen YAMNet and MiniLM "
        "towers, trained heads) and its baselines (docs/real_clap.md). 95 % intervals and findings: "
        "results/real_clap/."])


def _robust_table(robust: dict[str, Any]) -> Table:
    cols = ["original/t2a_r@10", "view2/t2a_r@10", "heldout/t2a_r@10", "view2/drop_r@10", "heldout/drop_r@10",
            "zero_shot_accuracy"]
    rows = [Row(name=name, values={c: res[c] for c in cols if c in res}) for name, res in robust.items()
            if isinstance(res, dict) and "original/t2a_r@10" in res]
    return Table(f"{TITLE}: RobustCLAP on WordNet views", rows, cols, lower_is_better={"view2/drop_r@10",
                                                                                        "heldout/drop_r@10"},
                 digits=4, notes=["Mean over the fine-tune seeds; view 2: WordNet synonyms and hypernyms; held-out: "
                                  "words in no training caption or view (docs/robust.md). Findings: "
                                  "real_robust.* in reports/conclusions.json."])


def _captioning_table(caps: dict[str, Any]) -> Table:
    rows = [Row(name=f"{config} ({len(c['seeds'])} seed{'s' if len(c['seeds']) > 1 else ''})",
                values={m: s["mean"] for m, s in c["metrics"].items()},
                std={m: s["std"] for m, s in c["metrics"].items() if s["std"] is not None})
            for config, c in caps["configs"].items()]
    rows += [Row(name=f"reference: {name}", values={m: v for m, v in corpus.items() if m in CAPTION_METRICS})
             for name, corpus in caps["references"].items()]
    return Table(f"{TITLE}: captioning", rows, CAPTION_METRICS, notes=[
        f"Test split: {caps['n_test_clips']} clips; mean ± sample std over training seeds. gpt2: GPT-2 from "
        "scratch, stages 1 and 2; smollm2: SmolLM2-135M, stage 1 with the LM frozen; encoder_<enc>_gpt2_s1 / "
        "_s12: GPT-2 at stage 1 / through stages 1 and 2 on the tower CLAP (default) or YAMNet's embedding (the "
        "tower CLAP through stages 1 and 2 is the gpt2 row). "
        f"{caps['overlapping_clips']} test clips have a reference caption that also captions a training "
        "clip; the scores rest on them (docs/captioning.md, findings real_captioning.*)."])


def _specialists_table(configs: dict[str, Any]) -> Table:
    rows = [Row(name=f"{config.removeprefix('subset_')} ({len(c['seeds'])} seeds)",
                values={m: s["mean"] for m, s in c["metrics"].items()},
                std={m: s["std"] for m, s in c["metrics"].items() if s["std"] is not None})
            for config, c in configs.items()]
    return Table(f"{TITLE}: encoders on the clips they are specialised for", rows, CAPTION_METRICS, notes=[
        "<subset>_<encoder>_gpt2_s1: GPT-2 at stage 1 on one family of the real corpus (data/real_subsets/<subset>: "
        "speech for Whisper, instruments for CREPE, effects for aisfx), trained, validated and tested on that "
        "family's clips only, so rows of different subsets are not comparable; YAMNet is each subset's baseline. "
        "Mean ± sample std over training seeds; findings real_captioning.specialist.*."], bold=False)


def _captioning_figure(caps: dict[str, Any]) -> Any:
    bars = []
    for config, c in caps["configs"].items():
        s = c["metrics"].get("cider_d")
        if s is not None:
            std = s["std"] or 0.0
            bars.append((config, s["mean"], s["mean"] - std, s["mean"] + std))
    lines = {n: corpus["cider_d"] for n, corpus in caps["references"].items() if "cider_d" in corpus}
    return figs.interval_chart({"test CIDEr-D": bars}, f"{TITLE}: captioning (±1 std over seeds)",
                               chance={"test CIDEr-D": max(lines.values())} if lines else None,
                               line_label=f"best reference ({max(lines, key=lines.get)})" if lines else "chance")


def real_corpus_section(data: dict[str, Any], _ctx: dict[str, Any]) -> Section:
    """The section's text, tables and figure."""
    caps = data["captioning"]
    text = (f"The real corpus (docs/corpus.md): the tower CLAP on {data['clap']['clips']} test clips, RobustCLAP "
            f"on WordNet views of their captions, and the ClipCap study on the same corpus "
            f"({caps['n_test_clips']} test clips). Every model in this section trained on real recordings.\n")
    tables = {"real_corpus_retrieval": _retrieval_table(data["clap"]),
              "real_corpus_robust": _robust_table(data["robust"]),
              "real_corpus_captioning": _captioning_table(caps)}
    if data.get("specialists"):
        tables["real_corpus_specialists"] = _specialists_table(data["specialists"])
    figures = {"real_corpus_captioning": _captioning_figure(caps)} if caps["configs"] else {}
    return Section(text=text, tables=tables, figures=figures)
