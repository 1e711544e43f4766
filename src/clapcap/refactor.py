"""Record a behaviour-unchanged code change without a rebuild, once a canary shows it is one.

``clapcap pipeline refactor-commit`` (docs/architecture.md, "Refactoring"):

1. the always-run stages refresh the code fingerprints (:mod:`clapcap.code_deps`);
2. ``dvc status`` must show *only* code changes: stages whose one changed dep is their
   ``build/code/<stage>.json``. A changed param, data dep, output or command is refused (that
   is a real change: ``make repro``). With ``rerun_params`` (``--rerun-params``), a stage whose
   other changes are ``params.yaml`` entries (keys moved, not values changed: a block nested
   under a new key) or its ``persist: true`` outputs (resume state removed, so that the stage
   trains from scratch) is admitted as a canary that must rerun: the rerun, not the params'
   text, decides whether anything changed;
3. the **canary**: the cheapest set of those stages that together run every changed file
   (a greedy set cover over the files whose fingerprint changed, each stage weighted by its
   seconds in the last build, ``reports/build_times.json``), or the stages given;
4. each canary stage reruns (``dvc repro --single-item --force``) and every one of its
   outputs must hash as ``dvc.lock`` recorded it before. Outputs are byte-stable for this:
   no stage writes a clock time or an MLflow id into a DVC-tracked output (times go to
   ``reports/build_times.json`` and the MLflow store, which DVC does not track). Outputs
   declared ``persist: true`` are not compared: they are resume state a stage keeps between
   runs (the judges' vote store and their server's log, checkpoints), which a rerun rewrites;
5. only then DVC's own ``dvc commit --force`` records the new code fingerprints of the other
   stages, which did not run.

A canary reruns a stage's command; a stage that resumes from state kept outside its outputs
(``models/*/cache``, ``results/captioning/lm_warmup``: see .gitignore) runs less of its code
than a first build does. The check is evidence, not proof: for a change that may alter
results, run ``make repro``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clapcap.code_deps import FINGERPRINT_DIR, recorded_fingerprint
from clapcap.errors import InputError
from clapcap.repro import (
    DEFAULT_TIMES,
    STAGE_ENV,
    dvc_status,
    load_graph,
    read_times,
    run_parallel,
    venv_path,
)

DEFAULT_SECONDS = 60.0  # a stage with no recorded time


class NotACodeChange(InputError):
    """``dvc status`` shows more than code changes: a rebuild is needed, not a commit."""


@dataclass
class RefactorResult:
    code_stages: list[str] = field(default_factory=list)
    canary: list[str] = field(default_factory=list)
    changed_outputs: dict[str, list[str]] = field(default_factory=dict)  # canary stage -> outputs that differ
    committed: list[str] = field(default_factory=list)
    failed: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed is None and not self.changed_outputs


def group_of(stage: str) -> str:
    """``caption_lm@0`` -> ``caption_lm``: a foreach/matrix item shares its definition's fingerprint."""
    return stage.split("@", 1)[0]


def classify(status: dict[str, list]) -> tuple[list[str], dict[str, str]]:
    """Split ``dvc status --json`` into stages whose only change is their code fingerprint and
    the others (with what changed); ``always changed`` alone is no change."""
    code, params, other = classify_params(status)
    return code, {**other, **params}


def classify_params(status: dict[str, list], persisted: frozenset[str] | set[str] = frozenset()
                    ) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """:func:`classify`, with the stages whose changes beyond their code are ``params.yaml``
    entries or ``persisted`` outputs (resume state) only set apart (the middle item, with what
    changed): they can rerun as canaries.

    Returns:
        ``(code stages, rerun stages, other stages)``.
    """
    code, params, other = [], {}, {}
    prefix = FINGERPRINT_DIR.rstrip("/") + "/"
    for stage, entries in status.items():
        stage = stage.split(":")[-1]
        reasons, params_only = [], True
        only_code = False
        for entry in entries:
            if entry == "always changed":
                continue
            if isinstance(entry, dict) and set(entry) == {"changed deps"}:
                deps = entry["changed deps"]
                non_code = {p: s for p, s in deps.items() if not p.startswith(prefix)}
                if non_code:
                    reasons.append(f"changed deps {non_code}")
                    params_only = params_only and set(non_code) == {"params.yaml"}
                else:
                    only_code = True
            elif isinstance(entry, dict) and set(entry) == {"changed outs"} and set(entry["changed outs"]) <= persisted:
                reasons.append(f"resume state {entry['changed outs']}")
            else:
                reasons.append(str(entry))
                params_only = False
        if reasons and params_only:
            params[stage] = "; ".join(reasons)
        elif reasons:
            other[stage] = "; ".join(reasons)
        elif only_code:
            code.append(stage)
    return code, params, other


def changed_files(old: dict | None, new: dict) -> set[str]:
    """Files of fingerprint ``new`` whose hash differs from ``old`` (all of them without ``old``)."""
    if not old or old.get("normalization") != new.get("normalization"):
        return set(new["files"])
    return {f for f, h in new["files"].items() if old["files"].get(f) != h}


def choose_canary(files: dict[str, set[str]], seconds: dict[str, float]) -> list[str]:
    """The stages (keys of ``files``) that together cover every file, picked greedily by files
    newly covered per second of build time (the cheapest good cover, not always the cheapest)."""
    todo = set().union(*files.values()) if files else set()
    chosen: list[str] = []
    while todo:
        best = max((s for s in files if s not in chosen and files[s] & todo),
                   key=lambda s: (len(files[s] & todo) / max(seconds.get(s, DEFAULT_SECONDS), 1.0), -len(s), s))
        chosen.append(best)
        todo -= files[best]
    return chosen


def _lock_stages(root: Path) -> dict[str, dict]:
    """``dvc.lock``'s entries by stage (empty without a lockfile)."""
    import yaml

    path = root / "dvc.lock"
    data = yaml.safe_load(path.read_text()) if path.is_file() else {}
    return (data or {}).get("stages", {})


def lock_outputs(root: Path) -> dict[str, dict[str, str]]:
    """Stage -> output path -> its hash, as ``dvc.lock`` records them."""
    return {name: {o["path"]: o.get("md5") or o.get("etag") or "" for o in entry.get("outs", [])}
            for name, entry in _lock_stages(root).items()}


def _read_fingerprints(root: Path) -> dict[str, dict]:
    out = {}
    for p in sorted((root / FINGERPRINT_DIR).glob("*.json")):
        try:
            out[p.stem] = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
    return out


def locked_fingerprints(root: Path) -> dict[str, dict | None]:
    """Stage -> the code fingerprint its ``dvc.lock`` entry was recorded with (None when that
    version was not kept: then every file of the stage counts as changed)."""
    prefix = FINGERPRINT_DIR.rstrip("/") + "/"
    out: dict[str, dict | None] = {}
    for name, entry in _lock_stages(root).items():
        for dep in entry.get("deps", []):
            if str(dep.get("path", "")).startswith(prefix) and dep.get("md5"):
                out[name] = recorded_fingerprint(root, dep["md5"])
    return out


def refactor_commit(root: str | Path = ".", *, canary: Sequence[str] | None = None, dry_run: bool = False,
                    dvc: Sequence[str] | None = None, say: Callable[[str], None] = print,
                    times_path: str = DEFAULT_TIMES, rerun_params: bool = False) -> RefactorResult:
    """Steps 1-5 of the module doc. ``canary`` replaces the chosen stages; ``dry_run`` stops
    after printing the plan; ``rerun_params`` admits stages whose params changed, each as a
    canary (step 2).

    Raises:
        NotACodeChange: when ``dvc status`` shows anything but code changes (and, with
            ``rerun_params``, params changes), or a ``canary`` stage is not one of the changed
            stages, or leaves out a stage whose params changed.
    """
    root = Path(root)
    dvc = list(dvc) if dvc else [str(Path(sys.executable).with_name("dvc"))]
    graph = load_graph(root)
    first = run_parallel(graph, graph.always_changed, jobs=1, root=root, dvc=dvc, say=say, env=STAGE_ENV)
    if not first.ok:
        return RefactorResult(failed=first.failed)
    code, params, other = classify_params(dvc_status(root, dvc), graph.persisted)
    if not rerun_params:
        other.update(params)
    if other:
        listed = "\n".join(f"  {s}: {why}" for s, why in sorted(other.items()))
        raise NotACodeChange(f"not only code changed, so this needs a rebuild (make repro), not a commit:\n{listed}")
    forced = sorted(params) if rerun_params else []
    for stage in forced:
        say(f"{stage}: params or resume state changed ({params[stage]}): it reruns as a canary")
    code = [*code, *forced]
    result = RefactorResult(code_stages=sorted(code))
    if not code:
        say("no stage's code changed: nothing to commit")
        return result
    after = _read_fingerprints(root)
    locked = locked_fingerprints(root)
    files = {s: changed_files(locked.get(s), after[group_of(s)]) for s in code}
    unknown_old = sorted(s for s in code if locked.get(s) is None)
    if unknown_old:
        say(f"no kept fingerprint for the locked code of {len(unknown_old)} stage(s) ({', '.join(unknown_old)}): "
            "every file they import counts as changed")
    seconds = read_times(root / times_path)
    if canary:
        unknown = sorted(set(canary) - set(code))
        if unknown:
            raise NotACodeChange(f"canary stage(s) {unknown} did not change; changed: {', '.join(sorted(code))}")
        if missing := sorted(set(forced) - set(canary)):
            raise NotACodeChange(f"stage(s) {missing} changed params: they must be canaries")
        result.canary = list(canary)
    else:  # the params stages rerun anyway: the cover completes what they leave
        by_forced = set().union(*(files[s] for s in forced))
        result.canary = [*forced, *choose_canary({s: f - by_forced for s, f in files.items() if s not in forced},
                                                 seconds)]
    covered = set().union(*(files[s] for s in result.canary)) if result.canary else set()
    changed = set().union(*files.values())
    est = sum(seconds.get(s, DEFAULT_SECONDS) for s in result.canary)
    say(f"{len(code)} stage(s) changed only in code ({len(changed)} file(s)); canary: "
        f"{', '.join(result.canary)} (about {est:.0f} s in the last build; runs {len(covered)} of the "
        f"{len(changed)} changed files)")
    if dry_run:
        return result
    recorded = lock_outputs(root)
    for stage in result.canary:
        say(f"canary: {stage}")
        run = subprocess.run([*dvc, "repro", "--single-item", "--force", stage], cwd=root,
                             env={**os.environ, **venv_path(), **STAGE_ENV}, capture_output=True, text=True)
        if run.returncode != 0:
            say(run.stdout[-3000:] + run.stderr[-3000:])
            result.failed = stage
            return result
        now = lock_outputs(root).get(stage, {})
        diff = sorted(p for p, h in recorded.get(stage, {}).items() if now.get(p) != h)
        if kept := [p for p in diff if p in graph.persisted]:
            say(f"canary {stage}: persisted output(s) rewritten, not compared (resume state): {', '.join(kept)}")
        if diff := [p for p in diff if p not in graph.persisted]:
            result.changed_outputs[stage] = diff
    if result.changed_outputs:
        for stage, paths in result.changed_outputs.items():
            say(f"canary {stage}: output(s) differ from dvc.lock: {', '.join(paths)}")
        say("not committed: the change altered results (or an output is not byte-stable); run make repro")
        return result
    rest = [s for s in result.code_stages if s not in result.canary]
    if rest:
        run = subprocess.run([*dvc, "commit", "--force", *rest], cwd=root, capture_output=True, text=True)
        if run.returncode != 0:
            say(run.stdout[-3000:] + run.stderr[-3000:])
            result.failed = "dvc commit"
            return result
    result.committed = rest
    say(f"canary outputs identical to dvc.lock; dvc commit recorded the new code of {len(rest)} stage(s)")
    return result
