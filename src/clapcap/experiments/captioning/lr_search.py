"""Optuna learning-rate search for the two training stages, resumable through SQLite.

- Stage 1: a 1-D sweep of the projection LR (LM frozen); objective = best val loss.
- Stage 2: a projection-LR x LM-LR grid, every trial starting from the stage-1 checkpoint
  of the chosen stage-1 LR.

Each grid point is enqueued once; trials already COMPLETE in the study (SQLite at
``<out>/optuna.db`` while the search runs) are reused, and each trial's training folder skips
finished work, so an interrupted search resumes. ``<out>/best.json`` marks a finished search,
which is then returned as is; the finished study moves to ``study_path`` (outside ``<out>``, a
DVC output that must be byte-stable: Optuna stores each trial's start and end times). ``<out>/lr_search.png`` shows where the chosen LRs sit, and
``best.json["at_grid_edge"]`` lists chosen LRs on the edge of a grid (a warning is logged).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path
from typing import Any

from clapcap.captioning.config import CaptionerConfig, TrainConfig
from clapcap.captioning.train import train_captioner
from clapcap.compute import Compute, or_default
from clapcap.experiments.captioning.config import LRSearchConfig
from clapcap.utils.io import atomic_path, read_json, write_json

logger = logging.getLogger(__name__)


def chosen_learning_rates(out_dir: str | Path) -> dict[str, float] | None:
    """The chosen LRs of a finished search in ``out_dir`` (``best.json``), else None."""
    path = Path(out_dir) / "best.json"
    if not path.is_file():
        return None
    best = read_json(path)
    return {k: best[k] for k in ("stage1_lr_projection", "stage2_lr_projection", "stage2_lr_lm")}


def _study(name: str, storage: str) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage=storage, direction="minimize", load_if_exists=True)
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        # A trial left RUNNING by a crash: mark it failed so its grid point is enqueued again.
        study._storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
    return study


def _run_grid(study: Any, grid: list[dict[str, float]], objective: Any) -> None:
    import optuna

    done = [t.params for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))]
    missing = [p for p in grid if not any(all(abs(d.get(k, -1) - v) < 1e-12 for k, v in p.items()) for d in done)]
    for point in missing:
        study.enqueue_trial(point)
    if missing:
        study.optimize(objective, n_trials=len(missing))


def _trials(study: Any) -> list[dict[str, Any]]:
    import optuna

    return [{**t.params, "val_loss": t.value} for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))]


def _fmt(lr: float) -> str:
    return f"{lr:.0e}".replace("e-0", "e-")


def search_learning_rates(model_cfg: CaptionerConfig, train_cfg: TrainConfig, search: LRSearchConfig, *,
                          dump: str | Path, dataset_dir: str | Path, out_dir: str | Path,
                          progress: bool = False, lm_cache_dir: str | Path | None = None,
                          study_path: str | Path | None = None, compute: Compute | None = None) -> dict[str, Any]:
    """Run (or resume, or reuse) the two-stage LR search; every trial trains on ``compute.device``.

    Returns:
        ``{"stage1_lr_projection", "stage2_lr_projection", "stage2_lr_lm", "stage1_trials",
        "stage2_trials", "plot", "study"}`` (also ``out_dir/best.json``); ``study`` is where the
        Optuna study was kept (``study_path``; by default ``<out_dir>/optuna.db`` stays).

    Raises:
        ValueError: on an empty grid.
    """
    compute = or_default(compute)  # resolved first: a missing CUDA fails before any trial
    out = Path(out_dir)
    if (out / "best.json").is_file():
        return read_json(out / "best.json")
    if not search.stage1_lrs or not search.stage2_projection_lrs or not search.stage2_lm_lrs:
        raise ValueError("lr_search: every grid needs at least one learning rate")
    out.mkdir(parents=True, exist_ok=True)
    storage = f"sqlite:///{(out / 'optuna.db').resolve()}"
    base = dataclasses.replace(train_cfg, seed=search.seed)
    lo1, hi1 = min(search.stage1_lrs), max(search.stage1_lrs)
    cache = lm_cache_dir or out / "lm_warmup"  # every trial starts from the same warmed-up LM

    def stage1(trial: Any) -> float:
        lr = trial.suggest_float("lr_projection", lo1, hi1, log=True)
        cfg = dataclasses.replace(base, stages=[1], stage1=dataclasses.replace(
            base.stage1, epochs=search.stage1_epochs, lr_projection=lr))
        res = train_captioner(model_cfg, cfg, dump=dump, dataset_dir=dataset_dir, out_dir=out / "trials" / f"s1_lr{_fmt(lr)}",
                              progress=progress, lm_cache_dir=cache, compute=compute)
        return float(res["stages"]["1"]["best_val_loss"])

    study1 = _study("stage1", storage)
    _run_grid(study1, [{"lr_projection": lr} for lr in search.stage1_lrs], stage1)
    lr1 = float(study1.best_params["lr_projection"])
    init = out / "trials" / f"s1_lr{_fmt(lr1)}" / "stage1" / "best"
    p_lo, p_hi = min(search.stage2_projection_lrs), max(search.stage2_projection_lrs)
    l_lo, l_hi = min(search.stage2_lm_lrs), max(search.stage2_lm_lrs)

    def stage2(trial: Any) -> float:
        lr_p = trial.suggest_float("lr_projection", p_lo, p_hi, log=True)
        lr_l = trial.suggest_float("lr_lm", l_lo, l_hi, log=True)
        cfg = dataclasses.replace(base, stages=[2], stage2=dataclasses.replace(
            base.stage2, epochs=search.stage2_epochs, lr_projection=lr_p, lr_lm=lr_l))
        res = train_captioner(model_cfg, cfg, dump=dump, dataset_dir=dataset_dir, init_from=init,
                              out_dir=out / "trials" / f"s2_p{_fmt(lr_p)}_lm{_fmt(lr_l)}",
                              progress=progress, compute=compute)
        return float(res["stages"]["2"]["best_val_loss"])

    study2 = _study("stage2", storage)
    _run_grid(study2, [{"lr_projection": p, "lr_lm": m} for p in search.stage2_projection_lrs
                       for m in search.stage2_lm_lrs], stage2)
    best = {"stage1_lr_projection": lr1, "stage2_lr_projection": float(study2.best_params["lr_projection"]),
            "stage2_lr_lm": float(study2.best_params["lr_lm"]), "stage1_trials": _trials(study1),
            "stage2_trials": _trials(study2)}
    best["at_grid_edge"] = grid_edges(best, search)
    if best["at_grid_edge"]:
        logger.warning("lr_search %s: %s chosen at the edge of the grid; widen the grid to confirm the optimum",
                       out, ", ".join(best["at_grid_edge"]))
    best["plot"] = str(plot_lr_search(best, out / "lr_search.png"))
    kept = out / "optuna.db"
    if study_path is not None:
        Path(study_path).parent.mkdir(parents=True, exist_ok=True)
        kept = Path(kept.replace(study_path))
    best["study"] = str(kept)
    write_json(out / "best.json", best)
    return best


def grid_edges(best: dict[str, Any], search: LRSearchConfig) -> list[str]:
    """The chosen LRs that sit on the smallest or largest value of a grid of 3 or more values.

    A choice on the edge means the optimum may lie outside the grid. Grids of one or two
    values are never flagged (every choice there is an edge).
    """
    grids = {"stage1_lr_projection": search.stage1_lrs, "stage2_lr_projection": search.stage2_projection_lrs,
             "stage2_lr_lm": search.stage2_lm_lrs}
    return [key for key, grid in grids.items()
            if len(set(grid)) >= 3 and any(math.isclose(best[key], edge) for edge in (min(grid), max(grid)))]


def plot_lr_search(best: dict[str, Any], path: str | Path) -> Path:
    """Plot the stage-1 sweep (val loss vs LR) and the stage-2 grid, chosen LRs starred. Returns ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np


    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    s1 = sorted(best["stage1_trials"], key=lambda t: t["lr_projection"])
    ax1.plot([t["lr_projection"] for t in s1], [t["val_loss"] for t in s1], "o-")
    chosen = next(t for t in s1 if abs(t["lr_projection"] - best["stage1_lr_projection"]) < 1e-12)
    ax1.plot([chosen["lr_projection"]], [chosen["val_loss"]], "r*", markersize=16, label="chosen")
    ax1.set(xscale="log", xlabel="projection LR", ylabel="best val loss", title="stage 1 (LM frozen)")
    ax1.legend()
    ps = sorted({t["lr_projection"] for t in best["stage2_trials"]})
    ls = sorted({t["lr_lm"] for t in best["stage2_trials"]})
    grid = np.full((len(ls), len(ps)), np.nan)
    for t in best["stage2_trials"]:
        grid[ls.index(t["lr_lm"]), ps.index(t["lr_projection"])] = t["val_loss"]
    im = ax2.imshow(grid, origin="lower", cmap="viridis_r")
    ax2.set_xticks(range(len(ps)), [_fmt(p) for p in ps])
    ax2.set_yticks(range(len(ls)), [_fmt(v) for v in ls])
    ax2.plot([ps.index(best["stage2_lr_projection"])], [ls.index(best["stage2_lr_lm"])], "r*", markersize=16)
    ax2.set(xlabel="projection LR", ylabel="LM LR", title="stage 2 (val loss)")
    fig.colorbar(im, ax=ax2)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return Path(path)
