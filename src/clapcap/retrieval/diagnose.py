"""Why do my numbers differ from the published ones? (``clapcap retrieval diagnose``)

A result is put beside the numbers the field compares against (``known_results.json``: the
reference parity report's four cells and CLAP-family rows of the AudioCaps t2a leaderboard;
docs/retrieval_metrics.md, "Known numbers"), and the usual causes of a mismatch are checked,
each **read from the dump's meta and shape**, never guessed:

- ``checkpoint``: another checkpoint, or the same hub id at an unrecorded revision;
- ``truncation``: ``fusion`` vs ``rand_trunc`` (a fused checkpoint embedded unfused or the reverse);
- ``sample_rate``: audio not at the rate the checkpoint was trained on (48 kHz for LAION-CLAP);
- ``long_clips``: how clips over the window are cut (clapcap's deterministic crop vs
  laion_clap's random one), reported with the window, as information;
- ``captions_per_clip``: 1 vs 5 captions per clip, and so single- vs multi-positive a2t;
- ``map_at_10``: whether a2t ``map@10`` is clapcap's TREC definition or LAION's (which can
  exceed 1; ``evaluate --laion-compatible``);
- ``test_set_size``: the number of test clips (AudioCaps test sets of 957 and 975 circulate);
- ``tokenizer``: clapcap's offline stand-in tokenizer, which gives a real checkpoint wrong ids.

LAION-AI/CLAP issues 59 and 140 are users asking exactly this question.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from clapcap.data.dump import EmbeddingDump, load_dump
from clapcap.errors import InputError
from clapcap.retrieval import metrics as harness
from clapcap.retrieval.parity import captions_per_clip
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

DATASETS = ("audiocaps", "clotho")
SHOWN = ("r@1", "r@5", "r@10", "map", "map@10")


@dataclass
class Cause:
    """One checked cause: what the dump says, what the known result assumes, and whether they differ."""

    name: str
    mine: Any
    known: Any
    differs: bool | None  # None: the known result does not say, or it is information only
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "mine": self.mine, "known": self.known, "differs": self.differs,
                "why": self.why}


def load_known(path: str | Path | None = None) -> list[dict[str, Any]]:
    """The known results (the packaged table, or ``path`` in the same format)."""
    if path is None:
        text = resources.files("clapcap.retrieval").joinpath("known_results.json").read_text()
    else:
        text = Path(path).read_text()
    return json.loads(text)["entries"]


def dataset_of(dump: EmbeddingDump, given: str | None) -> str:
    """``audiocaps`` or ``clotho``: ``given``, else read from the dump's dataset path.

    Raises:
        InputError: when neither says which.
    """
    if given:
        if given not in DATASETS:
            raise InputError(f"--dataset must be one of {', '.join(DATASETS)}, found {given!r}")
        return given
    where = str(dump.meta.get("dataset", "")).lower()
    found = [d for d in DATASETS if d in where]
    if len(found) != 1:
        raise InputError(f"cannot tell the dataset from the dump's meta (dataset: {where or 'none'}); "
                         f"pass --dataset {' or '.join(DATASETS)}")
    return found[0]


def check_causes(dump: EmbeddingDump, known: dict[str, Any], *, laion_compatible: bool) -> list[Cause]:
    """Each usual cause of a mismatch, checked against ``known``."""
    meta, prep = dump.meta, dump.meta.get("preprocessing", {}) or {}
    ck, kck = meta.get("checkpoint"), known.get("checkpoint")
    rev = meta.get("checkpoint_revision") or meta.get("checkpoint_sha256")
    cpc, kcpc = captions_per_clip(dump), known.get("captions_per_clip")
    window = prep.get("window_samples")
    tok = str(meta.get("tokenizer", ""))
    return [
        Cause("checkpoint", f"{ck} @ {rev[:12]}" if rev else ck, kck, None if kck is None else ck != kck,
              "another checkpoint gives other numbers; the same hub id at another revision too "
              "(the revision is recorded in dumps made since clapcap records it)"),
        Cause("truncation", prep.get("truncation"), known.get("truncation"),
              None if known.get("truncation") is None else prep.get("truncation") != known["truncation"],
              "a fused checkpoint embeds long clips from 4 mel views ('fusion'); unfused takes one "
              "10 s window ('rand_trunc')"),
        Cause("sample_rate", prep.get("sample_rate"), known.get("sample_rate"),
              None if known.get("sample_rate") is None else prep.get("sample_rate") != known["sample_rate"],
              "LAION-CLAP is trained at 48 kHz; audio at another rate is resampled or mis-read"),
        Cause("long_clips", {"window_samples": window, "crop": prep.get("crop")}, "laion_clap: random crop",
              None, "clips longer than the window are cut; clapcap cuts deterministically "
              f"({prep.get('crop')!r}), laion_clap's own evaluation cuts at random, so a few clips differ"),
        Cause("captions_per_clip", cpc, kcpc, None if kcpc is None else cpc != kcpc,
              "5 captions per clip make a2t multi-positive and t2a five times the queries"),
        Cause("map_at_10", "laion-compatible" if laion_compatible else "clapcap (TREC map_cut_10)",
              known.get("map_at_10"), None if known.get("map_at_10") is None else
              ("laion-compatible" if laion_compatible else "trec") != known["map_at_10"],
              "LAION-CLAP's a2t mAP@10 sums the positives' positions unsorted and can exceed 1 "
              "(evaluate --laion-compatible reproduces it)"),
        Cause("test_set_size", dump.n_clips, known.get("n_clips"),
              None if known.get("n_clips") is None else dump.n_clips != known["n_clips"],
              "AudioCaps test sets of 957 and 975 clips circulate (videos go missing); R@k moves with "
              "the candidate count"),
        Cause("tokenizer", tok or "not recorded", "roberta-base ids", "stand-in" in tok if tok else None,
              "clapcap's offline stand-in tokenizer gives a real checkpoint's text tower wrong ids"),
    ]


def _rank(entries: list[dict[str, Any]], dataset: str, checkpoint: str | None) -> list[dict[str, Any]]:
    """Known results on ``dataset``: the same checkpoint's first, then the reference's, then the rest."""
    same = [e for e in entries if e["dataset"] == dataset]
    return sorted(same, key=lambda e: (e.get("checkpoint") != checkpoint, e["origin"] != "reference_parity_report"))


def diagnose(dump_path: str | Path, *, dataset: str | None = None, laion_compatible: bool = False,
             known_path: str | Path | None = None, out_path: str | Path | None = None) -> dict[str, Any]:
    """Put a dump's retrieval metrics beside the known results and check the causes of a mismatch.

    Returns:
        ``{"dump", "dataset", "mine": {t2a, a2t}, "comparisons": [{"known", "rows": [{direction,
        metric, mine, known, delta}], "causes": [...], "differing": [cause names]}]}``;
        the first comparison is the closest known result (same checkpoint and dataset first).

    Raises:
        InputError: on an unknown dataset, or no known result for it.
        FileNotFoundError / DumpError: on a missing or invalid dump.
    """
    dump = load_dump(dump_path)
    ds = dataset_of(dump, dataset)
    mine = harness.evaluate_dump(dump, laion_compatible=laion_compatible, origin=str(dump_path))
    candidates = _rank(load_known(known_path), ds, dump.meta.get("checkpoint"))
    if not candidates:
        raise InputError(f"no known result on {ds}")
    comparisons = []
    for known in candidates:
        rows = [{"direction": d, "metric": m, "mine": float(mine[d][m]), "known": float(v),
                 "delta": float(mine[d][m]) - float(v)}
                for d, ms in known["metrics"].items() for m, v in ms.items() if m in mine.get(d, {})]
        causes = check_causes(dump, known, laion_compatible=laion_compatible)
        comparisons.append({"known": known["name"], "origin": known["origin"], "rows": rows,
                            "causes": [c.to_dict() for c in causes],
                            "differing": [c.name for c in causes if c.differs]})
    report = {"dump": Path(dump_path).name, "dataset": ds, "checkpoint": dump.meta.get("checkpoint"),
              "mine": {d: {m: float(mine[d][m]) for m in SHOWN if m in mine[d]} for d in harness.DIRECTIONS},
              "comparisons": comparisons}
    if out_path is not None:
        write_json(out_path, report)
    return report


def format_report(report: dict[str, Any], *, top: int = 1) -> str:
    """The closest ``top`` comparisons as text: a metric table, then the causes that differ."""
    lines = [f"{report['dump']} ({report['dataset']}, checkpoint {report['checkpoint']})"]
    for comp in report["comparisons"][:top]:
        lines.append(f"\nbeside: {comp['known']}")
        lines.append(f"  {'direction':<9} {'metric':<7} {'mine':>8} {'known':>8} {'delta':>8}")
        for r in comp["rows"]:
            lines.append(f"  {r['direction']:<9} {r['metric']:<7} {r['mine']:8.4f} {r['known']:8.4f} "
                         f"{r['delta']:+8.4f}")
        differing = [c for c in comp["causes"] if c["differs"]]
        lines.append("  causes that differ: " + (", ".join(c["name"] for c in differing) or "none found"))
        for c in differing:
            lines.append(f"  - {c['name']}: mine {c['mine']!r}, known {c['known']!r}: {c['why']}")
    return "\n".join(lines)
