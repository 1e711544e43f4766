"""Plot files for ``dvc plots``: training curves, LR searches and findings as uniform tables.

``dvc plots show`` and ``dvc plots diff`` need one row shape per file: a training history
whose rows carry validation metrics only on evaluated epochs (``models/*/train_result.json``)
does not render (DVC 3.67 raises ``TypeError`` on the mixed rows). This step rewrites what the
training stages already saved, without retraining, into CSV files with one header each:

- ``clap_<model>_loss.csv``: ``epoch, loss`` (training loss per epoch) of each CLAP model;
- ``clap_<model>_val.csv``: ``epoch`` and every validation metric of the evaluated epochs;
- ``caption_<run>_stage<s>.csv``: ``epoch, run_epoch, train_loss, val_loss`` of each captioning
  stage, ``run_epoch`` counting on from the run's earlier stages (stage 2 starts after stage 1
  on one axis, not on top of it);
- ``lr_<lm>_stage1.csv``: ``lr_projection, val_loss``; ``lr_<lm>_stage2.csv``:
  ``trial, lr_projection, lr_lm, val_loss`` (the trials of each LR search); the same for each
  architecture row's own search (``lr_checks``: ``lr_<row>_stage1.csv``, ...);
- ``ablations.csv``: ``finding, effect, ci_low, ci_high, verdict`` of the findings in
  ``reports/conclusions.json`` whose id starts with one of ``ablation_prefixes`` (the
  captioning ablation rows); they must share one metric, which the header names
  (``effect_<metric>``), so one axis never mixes units.

``dvc.yaml``'s top-level ``plots:`` names which columns each plot draws. The files are small
and committed to git (``cache: false``), so ``dvc plots diff <rev>`` works on a fresh clone.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clapcap.utils.io import atomic_dir, read_json

logger = logging.getLogger(__name__)


@dataclass
class CurvesParams:
    """``training_curves`` section of params.yaml.

    ``clap_models``: folders under ``models/`` with a ``train_result.json``;
    ``caption_runs``: folders under ``<captioning_dir>/runs`` with ``stage<s>/result.json``;
    ``lr_searches``: folders under ``<captioning_dir>/lr_search`` with a ``best.json``;
    ``lr_checks``: architecture rows with ``<captioning_dir>/lr_check/<row>/search/best.json``.
    """

    models_dir: str = "models"
    clap_models: list[str] = field(default_factory=list)
    captioning_dir: str = "results/captioning"
    caption_runs: list[str] = field(default_factory=list)
    lr_searches: list[str] = field(default_factory=list)
    lr_checks: list[str] = field(default_factory=list)
    conclusions: str = "reports/conclusions.json"
    ablation_prefixes: list[str] = field(default_factory=list)
    out_dir: str = "plots"


class CurvesError(ValueError):
    """A training record lacks what its plot file needs."""


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    if not rows:
        raise CurvesError(f"{path.name}: no rows to write")
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def _history(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise CurvesError(f"{path}: not found (run the stage that writes it first)")
    hist = read_json(path).get("history")
    if not isinstance(hist, list) or not hist:
        raise CurvesError(f"{path}: expected a non-empty 'history' list")
    return hist


def clap_rows(history: Sequence[dict[str, Any]]) -> tuple[list[list[Any]], list[str], list[list[Any]]]:
    """Split a CLAP history into loss rows, the validation columns and validation rows.

    Validation rows are the epochs that carry every validation metric of the first evaluated
    epoch; an evaluated epoch that lacks one of them is an error, not a silent gap.
    """
    loss = [[int(r["epoch"]), float(r["loss"])] for r in history]
    val_rows = [r for r in history if set(r) - {"epoch", "loss"}]
    cols = sorted(set(val_rows[0]) - {"epoch", "loss"}) if val_rows else []
    val = []
    for r in val_rows:
        missing = [c for c in cols if c not in r]
        if missing or set(r) - {"epoch", "loss"} != set(cols):
            raise CurvesError(f"epoch {r['epoch']}: validation metrics {sorted(set(r) - {'epoch', 'loss'})} "
                              f"differ from the first evaluated epoch's {cols}")
        val.append([int(r["epoch"])] + [float(r[c]) for c in cols])
    return loss, cols, val


def write_curves(params: CurvesParams) -> list[Path]:
    """Write every plot file of :class:`CurvesParams` into ``out_dir`` (atomically, as one
    folder) and return their paths."""
    models = Path(params.models_dir)
    cap = Path(params.captioning_dir)
    written: list[str] = []
    with atomic_dir(params.out_dir) as tmp:
        for name in params.clap_models:
            loss, cols, val = clap_rows(_history(models / name / "train_result.json"))
            _write_csv(tmp / f"clap_{name}_loss.csv", ["epoch", "loss"], loss)
            written.append(f"clap_{name}_loss.csv")
            if val:
                _write_csv(tmp / f"clap_{name}_val.csv", ["epoch", *cols], val)
                written.append(f"clap_{name}_val.csv")
        for run in params.caption_runs:
            stages = sorted(p for p in (cap / "runs" / run).glob("stage*/result.json"))
            if not stages:
                raise CurvesError(f"{cap / 'runs' / run}: no stage*/result.json")
            done = 0  # epochs of the run's earlier stages: run_epoch continues where they ended
            for path in stages:
                rows = [[int(r["epoch"]), done + int(r["epoch"]), float(r["train_loss"]), float(r["val_loss"])]
                        for r in _history(path)]
                fname = f"caption_{run}_{path.parent.name}.csv"
                _write_csv(tmp / fname, ["epoch", "run_epoch", "train_loss", "val_loss"], rows)
                written.append(fname)
                done = max(r[1] for r in rows)
        searches = [(lm, cap / "lr_search" / lm) for lm in params.lr_searches]
        searches += [(row, cap / "lr_check" / row / "search") for row in params.lr_checks]
        for lm, folder in searches:
            best_path = folder / "best.json"
            if not best_path.is_file():
                raise CurvesError(f"{best_path}: not found")
            best = read_json(best_path)
            s1 = [[float(t["lr_projection"]), float(t["val_loss"])] for t in best["stage1_trials"]]
            _write_csv(tmp / f"lr_{lm}_stage1.csv", ["lr_projection", "val_loss"], sorted(s1))
            written.append(f"lr_{lm}_stage1.csv")
            s2 = [[f"p{t['lr_projection']:g}_lm{t['lr_lm']:g}", float(t["lr_projection"]), float(t["lr_lm"]),
                   float(t["val_loss"])] for t in best.get("stage2_trials", [])]
            if s2:
                _write_csv(tmp / f"lr_{lm}_stage2.csv", ["trial", "lr_projection", "lr_lm", "val_loss"], s2)
                written.append(f"lr_{lm}_stage2.csv")
        if params.ablation_prefixes:
            findings = [f for f in read_json(params.conclusions)["findings"]
                        if f["id"].startswith(tuple(params.ablation_prefixes))]
            metrics = sorted({f["metric"] for f in findings})
            if len(metrics) != 1:
                raise CurvesError(f"ablation_prefixes {params.ablation_prefixes}: expected findings of one metric, "
                                  f"found {metrics or 'none'}")
            rows = [[f["id"], float(f["effect"]), float(f["ci"]["low"]), float(f["ci"]["high"]), f["verdict"]]
                    for f in findings]
            _write_csv(tmp / "ablations.csv", ["finding", f"effect_{metrics[0]}", "ci_low", "ci_high", "verdict"], rows)
            written.append("ablations.csv")
    logger.info("training_curves: wrote %d plot files to %s", len(written), params.out_dir)
    return [Path(params.out_dir) / w for w in written]
