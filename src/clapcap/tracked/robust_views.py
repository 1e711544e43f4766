"""RobustCLAP's the view-count study (``views.json``, analysis ``views``) at the tracked edge: run, then logged per model as a seed study
(:func:`clapcap.tracked.seed_study.log_seed_study`) when ``robust_benchmark.track``. One module
per step, so the stage's code fingerprint holds its own study only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap.tracked.seed_study import log_seed_study


def run_views(train: Any, bench: Any, study: Any, params: Any, *, compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.experiments.robust.views.run_view_count_study`, then its ``views.json`` logged
    per variant (:func:`log_seed_study`, analysis ``views``) when ``bench.track``."""
    from clapcap.experiments.robust.views import run_view_count_study

    result = run_view_count_study(train, bench, study, params, compute=compute)
    log_seed_study(Path(params.results_dir) / "views.json", stage="robust_views", experiment=bench.experiment,
                   analysis="views", enabled=bench.track, dataset_dir=bench.paraphrase_dir)
    return result
