"""RobustCLAP's the view-source study (``view_source.json``, analysis ``view_source``) at the tracked edge: run, then logged per model as a seed study
(:func:`clapcap.tracked.seed_study.log_seed_study`) when ``robust_benchmark.track``. One module
per step, so the stage's code fingerprint holds its own study only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap.tracked.seed_study import log_seed_study


def run_view_source(train: Any, control: Any, bench: Any, study: Any, params: Any, *,
                    compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.experiments.robust.view_source.run_view_source_study`, then its ``view_source.json``
    logged per model (:func:`log_seed_study`, analysis ``view_source``) when ``bench.track``."""
    from clapcap.experiments.robust.view_source import run_view_source_study

    result = run_view_source_study(train, control, bench, study, params, compute=compute)
    log_seed_study(Path(params.results_dir) / "view_source.json", stage="robust_view_source",
                   experiment=bench.experiment, analysis="view_source", enabled=bench.track,
                   dataset_dir=params.manifests_dir + "/llm")
    return result
