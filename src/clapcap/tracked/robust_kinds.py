"""RobustCLAP's the view-kinds study (``kinds.json``, analysis ``kinds``) at the tracked edge: run, then logged per model as a seed study
(:func:`clapcap.tracked.seed_study.log_seed_study`) when ``robust_benchmark.track``. One module
per step, so the stage's code fingerprint holds its own study only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap.tracked.seed_study import log_seed_study


def run_kinds(bench: Any, study: Any, train: Any, control: Any, params: Any, *, compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.experiments.robust.kinds.run_kind_study`, then its ``kinds.json`` logged per model
    (:func:`log_seed_study`, analysis ``kinds``) when ``bench.track``."""
    from clapcap.experiments.robust.kinds import run_kind_study

    result = run_kind_study(bench, study, train, control, params, compute=compute)
    log_seed_study(Path(params.out_dir) / "kinds.json", stage="robust_kinds", experiment=bench.experiment,
                   analysis="kinds", enabled=bench.track, dataset_dir=params.views_dir)
    return result
