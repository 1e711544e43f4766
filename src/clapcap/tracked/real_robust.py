"""RobustCLAP on the real tower CLAP (:mod:`clapcap.experiments.real.robust`) in MLflow: one parent run
(``clapcap-robust``, ``robust/real_towers/<params>``) with the params, the report files and
the findings, and one nested run per system (``base``, ``control``, ``robust``) with the same
keys (``test/t2a/r10``, ``test/heldout/t2a/r10``, ``test/heldout/t2a/r10_drop``, ...), so the
UI's compare view puts the three side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.config import to_dict
from clapcap.experiments.real.robust import VIEW_SETS, RealRobustParams, run_real_robust
from clapcap.utils.io import sha256_json

EXPERIMENT = "clapcap-robust"


def _system_metrics(block: dict[str, Any]) -> None:
    for metric in ("r@10", "map@10"):
        tracking.log_metrics({f"t2a_{metric}": block[f"original/t2a_{metric}"]}, scope="test")
        for view in VIEW_SETS:
            if f"{view}/t2a_{metric}" in block:
                tracking.log_metrics({f"t2a_{metric}": block[f"{view}/t2a_{metric}"]}, scope="test", view=view)
    for view in VIEW_SETS:
        if f"{view}/drop_r@10" in block:
            tracking.log_metrics({"t2a_r@10": block[f"{view}/drop_r@10"]}, scope="test", view=view, stat="drop")


def run_tracked_real_robust(params: RealRobustParams) -> dict[str, Any]:
    """:func:`~clapcap.experiments.real.robust.run_real_robust`, in MLflow (module docstring)."""
    row = "real_towers" if params.name == "real_robust" else params.name.removeprefix("real_robust_") + "_views"
    name = tracking.run_name("robust", row, sha256_json(to_dict(params))[:8])
    with tracking.tracked("real_robust", experiment=EXPERIMENT, name=name, params=to_dict(params)):
        parent = tracking.active_run_id()
        metrics = run_real_robust(params)
        for name_ in ("metrics.json", "report.md", "conclusions.json", "findings.md"):
            tracking.log_artifact(Path(params.out_dir) / name_, "results")
        for system, block in metrics["systems"].items():
            with tracking.tracked("real_robust", experiment=EXPERIMENT, name=f"{name}/{system}", parent=parent,
                                  tags={"clapcap.system": system}):
                _system_metrics(block)
    return metrics
