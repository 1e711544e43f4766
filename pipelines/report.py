"""DVC stage ``report``: collect the pipeline's results and build the report (tables, figures)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.reporting.collect import CollectParams, collect_and_report
from clapcap.reporting.config import ReportParams
from clapcap.reporting.report import build_report


def _builder(track: bool) -> Callable[..., dict[str, Any]]:
    """The report builder: inside an MLflow run (clapcap.tracked.report) when ``track``."""
    if not track:
        return build_report
    from clapcap.tracked.report import build_report as tracked_build_report

    return tracked_build_report


def main() -> None:
    params = load_section(ReportParams, "report")
    captioning = load_section(CaptioningParams, "captioning")  # its results folder and LMs, not repeated
    collect_and_report(load_section(CollectParams, "report_inputs"), params.out_dir,
                       captioning_dir=captioning.out_dir, lms=captioning.lms,
                       decoding_seed=captioning.noise_seeds[0], music_baseline=captioning.music.baseline,
                       extra_inputs=params.inputs, conclusions=params.conclusions,
                       conclusions_out=params.conclusions_out, build=_builder(params.track))


if __name__ == "__main__":
    sys.exit(run_script(main))
