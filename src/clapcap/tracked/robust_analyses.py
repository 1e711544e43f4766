"""RobustCLAP's analyses at the tracked edge: the kinds, view-count and view-source studies, each
run and logged per model as a seed study (:func:`clapcap.tracked.seed_study.log_seed_study`) when
``robust_benchmark.track``. Apart from the captioning analyses
(:mod:`clapcap.tracked.captioning_analyses`), so an edit to a captioning module reruns no
RobustCLAP stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap.tracked.seed_study import log_seed_study


def run_kinds(bench: Any, study: Any, train: Any, control: Any, params: Any, *, compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.robust.kinds.run_kind_study`, then its ``kinds.json`` logged per model
    (:func:`log_seed_study`, analysis ``kinds``) when ``bench.track``."""
    from clapcap.robust.kinds import run_kind_study

    result = run_kind_study(bench, study, train, control, params, compute=compute)
    log_seed_study(Path(params.out_dir) / "kinds.json", stage="robust_kinds", experiment=bench.experiment,
                   analysis="kinds", enabled=bench.track, dataset_dir=params.views_dir)
    return result


def run_views(train: Any, bench: Any, study: Any, params: Any, *, compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.robust.views_study.run_view_count_study`, then its ``views.json`` logged
    per variant (:func:`log_seed_study`, analysis ``views``) when ``bench.track``."""
    from clapcap.robust.views_study import run_view_count_study

    result = run_view_count_study(train, bench, study, params, compute=compute)
    log_seed_study(Path(params.results_dir) / "views.json", stage="robust_views", experiment=bench.experiment,
                   analysis="views", enabled=bench.track, dataset_dir=bench.paraphrase_dir)
    return result


def run_view_source(train: Any, control: Any, bench: Any, study: Any, params: Any, *,
                    compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.robust.view_source.run_view_source_study`, then its ``view_source.json``
    logged per model (:func:`log_seed_study`, analysis ``view_source``) when ``bench.track``."""
    from clapcap.robust.view_source import run_view_source_study

    result = run_view_source_study(train, control, bench, study, params, compute=compute)
    log_seed_study(Path(params.results_dir) / "view_source.json", stage="robust_view_source",
                   experiment=bench.experiment, analysis="view_source", enabled=bench.track,
                   dataset_dir=params.manifests_dir + "/llm")
    return result
