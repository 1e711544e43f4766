"""Conclusions as data: each stated finding with its effect, interval, seeds and verdict.

``reports/conclusions.json`` holds one entry per finding that the README or the report
states. Prose quotes these entries; no finding is typed by hand. Two builds (the committed
one and a fresh rebuild, or a rebuild with other training seeds) are compared with
:func:`diff_conclusions` (``clapcap conclusions diff OLD NEW``): ``dvc metrics diff`` shows
numbers, this shows conclusions.

File format (version 1)::

    {"version": 1,
     "findings": [{"id", "statement", "metric", "a", "b", "claim", "margin",
                   "effect", "ci": {"low", "high"}, "confidence",
                   "n_seeds": {"a", "b"}, "seeds": {"a": [...], "b": [...]}, "n_items",
                   "per_seed_effects", "verdict", "method"}, ...]}

A *flip* is a finding whose verdict went from ``holds`` to ``reversed`` or back: the
conclusion did not survive the rebuild. A move to or from ``within noise`` is a change,
listed but not a flip.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clapcap.evaluation.seed_bootstrap import (
    CLAIMS,
    VERDICTS,
    Claim,
    SeedScores,
    compare_over_seeds,
    verdict,
)
from clapcap.utils.io import atomic_path, write_json

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
METHOD = ("two-level bootstrap over training seeds and test items (clapcap.evaluation."
          "seed_bootstrap); holds needs the interval and every seed on the claimed side")
_REQUIRED = ("id", "statement", "metric", "a", "b", "claim", "effect", "ci", "verdict")


class ConclusionsError(ValueError):
    """A conclusions file or finding spec is malformed; the message names the file and entry."""


@dataclass(frozen=True)
class FindingSpec:
    """A finding to test: ``claim`` about system ``a`` against ``b`` on ``metric``."""

    id: str
    statement: str
    metric: str
    a: str
    b: str
    claim: Claim
    margin: float = 0.0

    def __post_init__(self) -> None:
        if not self.id or not self.id.replace("_", "").replace("-", "").replace(".", "").isalnum():
            raise ConclusionsError(f"finding id: expected letters, digits, '_', '-', '.', found {self.id!r}")
        if self.claim not in CLAIMS:
            raise ConclusionsError(f"{self.id}: claim: expected one of {CLAIMS}, found {self.claim!r}")


def evaluate_finding(spec: FindingSpec, a: SeedScores, b: SeedScores, *, paired_seeds: bool = False,
                     n_resamples: int = 2000, confidence: float = 0.95, rng_seed: int = 0) -> dict:
    """Test one finding over seeds and items.

    Returns:
        The finding's JSON entry (see the module docstring).

    Raises:
        ValueError: from :func:`~clapcap.evaluation.seed_bootstrap.compare_over_seeds`.
    """
    cmp = compare_over_seeds(a, b, paired_seeds=paired_seeds, n_resamples=n_resamples,
                             confidence=confidence, rng_seed=rng_seed)
    entry = {"id": spec.id, "statement": spec.statement, "metric": spec.metric, "a": spec.a,
             "b": spec.b, "claim": spec.claim, "margin": spec.margin}
    entry.update(cmp.to_dict())
    entry["seeds"] = {"a": list(a.seeds), "b": list(b.seeds)}
    entry["verdict"] = verdict(cmp, spec.claim, margin=spec.margin)
    entry["method"] = METHOD
    return entry


def write_conclusions(findings: list[dict], path: str | Path) -> Path:
    """Atomically write the findings (sorted by id) as strict JSON.

    Raises:
        ConclusionsError: on duplicate ids or a malformed entry.
    """
    _check_findings(findings, str(path))
    ordered = sorted(findings, key=lambda f: f["id"])
    return write_json(path, {"version": FORMAT_VERSION, "findings": ordered})


def findings_markdown(findings: list[dict]) -> str:
    """A Markdown table of findings: statement, effect with its interval, per-seed effects,
    seed counts and the verdict."""
    lines = ["| finding | effect [95% CI] | per seed | seeds | verdict |", "|---|---|---|---|---|"]
    for f in findings:
        per_seed = ", ".join(f"{v:+.3f}" for v in f["per_seed_effects"].values())
        lines.append(f"| {f['statement']} ({f['metric']}, {f['claim']}"
                     f"{', margin ' + format(f['margin'], 'g') if f['margin'] else ''}) | "
                     f"{f['effect']:+.3f} [{f['ci']['low']:+.3f}, {f['ci']['high']:+.3f}] | {per_seed} | "
                     f"{f['n_seeds']['a']} vs {f['n_seeds']['b']} | **{f['verdict']}** |")
    return "\n".join(lines) + "\n"


def publish_findings(findings: list[dict], conclusions: str | Path, markdown: str | Path) -> None:
    """Write a study's findings as a conclusions file and a Markdown table, and log each verdict.

    Raises:
        ConclusionsError: on duplicate ids or a malformed entry.
    """
    write_conclusions(findings, conclusions)
    with atomic_path(markdown) as tmp:
        tmp.write_text(findings_markdown(findings))
    for f in findings:
        logger.info("%s: %+.4f [%+.4f, %+.4f] -> %s", f["id"], f["effect"], f["ci"]["low"], f["ci"]["high"],
                    f["verdict"])


def _check_findings(findings: Any, origin: str) -> None:
    if not isinstance(findings, list):
        raise ConclusionsError(f"{origin}: findings: expected a list, found {type(findings).__name__}")
    seen: set[str] = set()
    for i, f in enumerate(findings, start=1):
        if not isinstance(f, dict):
            raise ConclusionsError(f"{origin}: finding {i}: expected an object, found {type(f).__name__}")
        missing = [k for k in _REQUIRED if k not in f]
        if missing:
            raise ConclusionsError(f"{origin}: finding {i} ({f.get('id', '?')}): missing {missing}")
        if f["verdict"] not in VERDICTS:
            raise ConclusionsError(f"{origin}: finding {f['id']}: verdict: expected one of {VERDICTS}, "
                                   f"found {f['verdict']!r}")
        if f["id"] in seen:
            raise ConclusionsError(f"{origin}: finding id {f['id']!r} appears twice")
        seen.add(f["id"])


def load_conclusions(path: str | Path) -> dict[str, dict]:
    """Read a conclusions file.

    Returns:
        Findings by id.

    Raises:
        ConclusionsError: on a missing file, invalid JSON, a wrong version or a bad entry.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(), parse_constant=_refuse_constant)
    except FileNotFoundError as err:
        raise ConclusionsError(f"{path}: no such conclusions file") from err
    except json.JSONDecodeError as err:
        raise ConclusionsError(f"{path}:{err.lineno}: not valid JSON: {err.msg}") from err
    except _NonStrict as err:
        raise ConclusionsError(f"{path}: {err} is not valid JSON (write null and a reason)") from err
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        found = data.get("version") if isinstance(data, dict) else type(data).__name__
        raise ConclusionsError(f"{path}: expected a conclusions file of version {FORMAT_VERSION}, "
                               f"found {found!r}")
    _check_findings(data.get("findings"), str(path))
    return {f["id"]: f for f in data["findings"]}


def merge_conclusions(paths: list[str | Path], out: str | Path) -> Path:
    """Write one conclusions file holding every finding of ``paths`` (the report stage's
    ``reports/conclusions.json``, gathered from each study's own file).

    Raises:
        ConclusionsError: on a bad input file, or an id that two files both define.
    """
    merged: dict[str, dict] = {}
    for path in paths:
        for fid, finding in load_conclusions(path).items():
            if fid in merged:
                raise ConclusionsError(f"{path}: finding id {fid!r} is also defined by another input")
            merged[fid] = finding
    return write_conclusions(list(merged.values()), out)


class _NonStrict(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NonStrict(name)


@dataclass
class ConclusionsDiff:
    """What changed between two builds' conclusions."""

    flipped: list[tuple[str, str, str]] = field(default_factory=list)  # (id, old, new)
    changed: list[tuple[str, str, str]] = field(default_factory=list)
    unchanged: list[tuple[str, str]] = field(default_factory=list)  # (id, verdict)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no finding flipped between holds and reversed and none disappeared."""
        return not self.flipped and not self.removed


def diff_conclusions(old: dict[str, dict], new: dict[str, dict]) -> ConclusionsDiff:
    """Compare two builds' findings by id (see the module docstring for flips)."""
    out = ConclusionsDiff()
    for fid in sorted(old.keys() | new.keys()):
        if fid not in new:
            out.removed.append(fid)
        elif fid not in old:
            out.added.append(fid)
        else:
            v_old, v_new = old[fid]["verdict"], new[fid]["verdict"]
            if v_old == v_new:
                out.unchanged.append((fid, v_old))
            elif {v_old, v_new} == {"holds", "reversed"}:
                out.flipped.append((fid, v_old, v_new))
            else:
                out.changed.append((fid, v_old, v_new))
    return out


def _effect_text(f: dict) -> str:
    ci = f["ci"]
    return f"{f['effect']:+.4f} [{ci['low']:+.4f}, {ci['high']:+.4f}]"


def format_diff(diff: ConclusionsDiff, old: dict[str, dict], new: dict[str, dict]) -> str:
    """A plain-text report of :func:`diff_conclusions`, one line per finding."""
    lines = []
    for fid, a, b in diff.flipped:
        lines.append(f"FLIPPED  {fid}: {a} -> {b}  ({_effect_text(old[fid])} -> {_effect_text(new[fid])})")
    for fid, a, b in diff.changed:
        lines.append(f"changed  {fid}: {a} -> {b}  ({_effect_text(old[fid])} -> {_effect_text(new[fid])})")
    for fid, v in diff.unchanged:
        lines.append(f"same     {fid}: {v}  ({_effect_text(old[fid])} -> {_effect_text(new[fid])})")
    lines += [f"added    {fid}: {new[fid]['verdict']}" for fid in diff.added]
    lines += [f"REMOVED  {fid} (was {old[fid]['verdict']})" for fid in diff.removed]
    lines.append(f"{len(diff.flipped)} flipped, {len(diff.changed)} changed, {len(diff.unchanged)} "
                 f"unchanged, {len(diff.added)} added, {len(diff.removed)} removed")
    return "\n".join(lines)
