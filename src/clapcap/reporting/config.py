"""Typed ``report`` section of params.yaml."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ReportParams:
    """Output folder, MLflow logging and input files per report section.

    ``inputs`` maps a section of :data:`clapcap.reporting.report.SECTIONS` to its JSON
    files; a section whose files do not exist yet is reported as "not run". ``conclusions``
    lists each study's conclusions file; the stage merges them into ``conclusions_out``
    (the one file the README and the report quote) and reports them as ``findings``.
    """

    out_dir: str = "reports/final"
    track: bool = True
    inputs: dict[str, list[str]] = field(default_factory=dict)
    conclusions: list[str] = field(default_factory=list)
    conclusions_out: str = "reports/conclusions.json"
