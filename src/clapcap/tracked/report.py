"""The report at the tracked edge: one MLflow run (``clapcap-report``) holding its figures and tables."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clapcap import tracking
from clapcap.reporting import report


def build_report(inputs: Mapping[str, Any], out_dir: str | Path, *,
                 leaderboard_path: str | Path | None = None) -> dict[str, Any]:
    """:func:`clapcap.reporting.report.build_report` inside a ``report`` run: each figure as it
    is drawn, then the tables and ``report.md``. Returns the report's summary."""
    out_dir = Path(out_dir)
    with tracking.tracked("report", experiment="clapcap-report", name=tracking.run_name("report", "summary"),
                          params={k: ",".join(map(str, report.as_paths(v))) for k, v in inputs.items()}):
        summary = report.build_report(inputs, out_dir, leaderboard_path=leaderboard_path,
                                      on_figure=tracking.log_figure)
        tracking.log_artifact(out_dir / "tables", artifact_path="tables")
        tracking.log_artifact(out_dir / "report.md")
    return summary
