"""Check an MLflow store against the tracking conventions of docs/tracking.md.

Usage::

    python tools/check_mlflow_store.py [--tracking-uri URI] [--stale-after-hours H]
    # default store: $MLFLOW_TRACKING_URI or mlruns/mlflow.db

Prints one line per problem (metric keys outside the vocabulary, duplicate run names, empty
runs, captioning configurations split over runs, seeds without a parent run, runs without
provenance tags, stale RUNNING runs: a dead process's, or an unchecked one older than H
hours, default 24) and exits 1 when there is any; exits 0 on a clean store.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from clapcap.tracking import default_tracking_uri
    from clapcap.tracking.check import STALE_AFTER_HOURS, check_store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default=None, help="the store (default: the project's)")
    parser.add_argument("--stale-after-hours", type=float, default=STALE_AFTER_HOURS,
                        help="a RUNNING run whose process cannot be checked is stale after this")
    args = parser.parse_args(argv)
    problems = check_store(args.tracking_uri or default_tracking_uri(), stale_after_hours=args.stale_after_hours)
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)" if problems else "store follows the tracking conventions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
