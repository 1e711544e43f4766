"""DVC stage ``report``: build the report from the result JSONs named in params.yaml ``report``."""

from __future__ import annotations

import logging

from clapcap.config import load_section
from clapcap.reporting.config import ReportParams
from clapcap.reporting.report import build_report


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    params = load_section(ReportParams, "report")
    build_report(params.inputs, params.out_dir, track=params.track)


if __name__ == "__main__":
    main()
