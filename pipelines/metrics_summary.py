"""DVC stage `metrics_summary`: the headline numbers `dvc metrics show` prints, one small file
each, read from the stages' detailed results (params.yaml `metrics_summary`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.reporting.summary_metrics import MetricsSummaryParams, write_summary


def main() -> int:
    write_summary(load_section(MetricsSummaryParams, "metrics_summary"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
