"""`clapcap registry ...`: compare two registered versions, promote one on a person's word, and
relocate a copied local store.

Both verbs work on the store of ``$MLFLOW_TRACKING_URI`` (a shared ``mlflow server``) or,
when it is unset, the project's SQLite store (:func:`clapcap.tracking.default_tracking_uri`).
"""

from __future__ import annotations

import argparse
import getpass
import json
from pathlib import Path

from clapcap.cli._common import add_command, add_group


def _compare(args: argparse.Namespace) -> int:
    from clapcap import tracking
    from clapcap.retrieval.item_scores import ITEM_SCORES_FILE, compare_item_scores

    names = (f"{args.name} v{args.version_a}", f"{args.name} v{args.version_b}")
    a = tracking.version_artifact_json(args.name, args.version_a, ITEM_SCORES_FILE)
    b = tracking.version_artifact_json(args.name, args.version_b, ITEM_SCORES_FILE)
    row = compare_item_scores(a, b, metric=args.metric, names=names, n_resamples=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps({"name": args.name, "version_a": args.version_a, "version_b": args.version_b, **row},
                         indent=2))
        return 0
    print(f"{args.name}: v{args.version_a} (A) vs v{args.version_b} (B), paired on the same "
          f"{row['n_items']} {row['split']} items, {row['n_resamples']} bootstrap resamples")
    print(f"{row['metric']}  A {row['a']:.4f}  B {row['b']:.4f}  A-B {row['difference']:+.4f}  "
          f"{row['confidence']:.0%} CI [{row['ci']['low']:+.4f}, {row['ci']['high']:+.4f}]  "
          f"p={row['p_value']:.4f} (two-sided)")
    return 0


def _promote(args: argparse.Namespace) -> int:
    from clapcap import tracking

    done = tracking.promote(args.name, args.version, by=args.by, reason=args.reason, alias=args.alias)
    previous = f"v{done['previous']}" if done["previous"] is not None else "no version"
    print(f"{done['name']}@{done['alias']}: {previous} -> v{done['version']} "
          f"(by {done['by']} at {done['at']}: {done['reason']})")
    return 0


def _relocate(args: argparse.Namespace) -> int:
    from clapcap.tracking.relocate import relocate_store

    changed = relocate_store(args.db)
    where = Path(args.db).resolve().parent / "artifacts"
    if not changed:
        print(f"{args.db}: already points at {where}")
    else:
        print(f"{args.db}: {sum(changed.values())} artifact locations now under {where} "
              f"({', '.join(f'{k} {v}' for k, v in sorted(changed.items()))})")
    return 0


def register(subparsers, name: str, help_text: str) -> None:
    """Add the ``registry`` group and its commands to ``subparsers``."""
    group = add_group(subparsers, name, help_text)

    p = add_command(group, "compare", _compare,
                    "paired bootstrap of two registered versions on the same test items (A - B)")
    p.add_argument("name", help="registered model name")
    p.add_argument("version_a", type=int, help="version A")
    p.add_argument("version_b", type=int, help="version B")
    p.add_argument("--metric", default=None,
                   help="group/metric to compare (default: the family's primary metric, e.g. t2a/r@10)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")

    p = add_command(group, "promote", _promote,
                    "point an alias (default @champion) at a version on a person's word, recorded as tags")
    p.add_argument("name", help="registered model name")
    p.add_argument("version", type=int, help="the version to promote")
    p.add_argument("--reason", required=True, help="why (recorded on the version)")
    p.add_argument("--by", default=getpass.getuser(), help="who decides (default: the current user)")
    p.add_argument("--alias", default="champion", help="alias to move (default: champion)")

    p = add_command(group, "relocate-store", _relocate,
                    "after copying or moving mlruns/: point the local store's artifact locations at the "
                    "copy's own mlruns/artifacts (MLflow records them as absolute paths)")
    p.add_argument("db", nargs="?", default="mlruns/mlflow.db", help="the SQLite store (default mlruns/mlflow.db)")
