"""``dvc repro`` with independent stages side by side (``make repro``, ``clapcap pipeline repro``).

``dvc repro`` runs one stage at a time. Most stages here train tiny models on one thread, so
on a 2-core machine half of it sat idle. DVC itself allows several ``dvc repro`` processes
in one workspace: it holds the repository lock only while it reads and writes its own
state, releases it while a stage's command runs (``Stage._run_stage`` is ``unlocked_repo``),
and keeps per-output read/write locks. This scheduler builds on that and nothing else:

1. stages that are ``always_changed`` (``data_listing``) run first, alone (one that reads
   another stage's output waits for it when that stage has work to do);
2. ``dvc status`` then names the changed stages; they and everything downstream of them
   are the work;
3. up to ``jobs`` stages run at once, each as ``dvc --wait-for-lock repro --single-item
   STAGE`` once every stage it depends on has finished, so every stage is still run,
   skipped, cached and written to ``dvc.lock`` by DVC;
4. the longest remaining chain goes first: a stage's weight is its seconds in the last
   build (``build_times.json``, written at the end), or 1 where none is known.

A failed stage stops new launches; the running ones finish; the failed stage's log tail is
printed and the exit code is 1. Each stage's full output is in ``<log_dir>/<stage>.log``.
Results do not depend on ``jobs``: every stage runs with one intra-op thread
(:data:`STAGE_ENV`) unless its params set another. One METEOR server
(:mod:`clapcap.evaluation.meteor_jvm`) serves every stage of the build.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clapcap.build_machine import machine_record
from clapcap.utils.io import atomic_path, write_json

logger = logging.getLogger(__name__)

DEFAULT_LOG_DIR = ".dvc/tmp/repro"
# One intra-op thread per stage, whatever ``jobs``: two stages on two cores never oversubscribe
# them (torch's default takes every core, and OpenMP threads that share a core spin and
# slow both stages several-fold), and a stage's float rounding does not depend on ``jobs``.
# Stages whose params set ``torch_threads`` still set their own.
STAGE_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def venv_path() -> dict[str, str]:
    """``PATH`` with this interpreter's folder first: stage commands call ``python``, which must be
    the project's venv also when ``clapcap`` is run without ``make`` (which exports it)."""
    return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
DEFAULT_TIMES = "reports/build_times.json"
_TAIL_LINES = 40


@dataclass
class StageGraph:
    """Stage names in ``dvc.yaml`` order, each with the stages it depends on."""

    order: list[str]
    upstream: dict[str, set[str]]
    always_changed: set[str] = field(default_factory=set)
    outputs: set[str] = field(default_factory=set)  # every stage output path, relative to the root
    persisted: set[str] = field(default_factory=set)  # the outputs declared `persist: true` (resume state)

    def downstream_closure(self, names: set[str]) -> set[str]:
        """``names`` and every stage that depends on one of them, directly or not."""
        down: dict[str, set[str]] = {n: set() for n in self.order}
        for n, ups in self.upstream.items():
            for u in ups:
                down[u].add(n)
        seen, todo = set(names), list(names)
        while todo:
            for d in down[todo.pop()]:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen


def load_graph(root: str | Path = ".") -> StageGraph:
    """The stage graph of the DVC project at ``root`` (DVC's own index)."""
    from dvc.repo import Repo

    # Stage addresses are relative to the working directory: read them from ``root``.
    with contextlib.chdir(root), Repo(".") as repo:
        stages = list(repo.index.stages)
        order = [s.addressing for s in stages]
        upstream = {s.addressing: set() for s in stages}
        for stage, dep in repo.index.graph.edges:  # an edge points from a stage to a stage it depends on
            upstream[stage.addressing].add(dep.addressing)
        always = {s.addressing for s in stages if s.always_changed}
        outs = [(os.path.relpath(o.fs_path), o.persist) for s in stages for o in s.outs]
    return StageGraph(order, upstream, always, {p for p, _ in outs}, {p for p, kept in outs if kept})


def dvc_status(root: str | Path = ".", dvc: Sequence[str] = ("dvc",)) -> dict[str, list]:
    """``dvc status --json``: stage address -> what changed (empty when all is up to date)."""
    out = subprocess.run([*dvc, "status", "--json"], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"dvc status failed (exit {out.returncode}): {out.stderr.strip()[-2000:]}")
    text = out.stdout.strip()
    return json.loads(text[text.index("{"):]) if "{" in text else {}


def changed_stages(root: str | Path = ".", dvc: Sequence[str] = ("dvc",)) -> set[str]:
    """Stages that ``dvc status`` reports as changed (their deps, params, outs or command)."""
    return {name.split(":")[-1] for name in dvc_status(root, dvc)}


def priorities(graph: StageGraph, work: set[str], seconds: dict[str, float]) -> dict[str, float]:
    """Each stage's longest weighted chain to the end of the work (itself included)."""
    down: dict[str, set[str]] = {n: set() for n in work}
    for n in work:
        for u in graph.upstream[n] & work:
            down[u].add(n)
    memo: dict[str, float] = {}

    def chain(n: str) -> float:
        if n not in memo:
            memo[n] = seconds.get(n, 1.0) + max((chain(d) for d in down[n]), default=0.0)
        return memo[n]

    for n in work:
        chain(n)
    return memo


def _tail(path: Path, lines: int = _TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace").replace("\r", "\n")
    except OSError:
        return ""
    return "\n".join([ln for ln in text.splitlines() if ln.strip()][-lines:])


def _log_name(stage: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in stage) + ".log"


@dataclass
class ReproResult:
    """What a build did: stages run (with seconds), the failed one, the wall time."""

    seconds: dict[str, float]
    failed: str | None
    wall_s: float
    jobs: int

    @property
    def ok(self) -> bool:
        return self.failed is None


# Failures that say nothing about the stage, only that another stage ran beside it: two stages
# logging the same dataset to one MLflow experiment at the same moment both insert it
# (MLflow's log_input looks it up, then inserts: not atomic across processes; since 2026-12-06
# clapcap.tracking.runs tries that insert again itself, which also covers `dvc queue`), and the
# SQLite store may answer a second writer "database is locked". Seen once in 80-odd stages (robust_train
# and robust_control, 2026-12-06). Such a stage is run again, once: stages resume and DVC
# rewrites their outputs, so nothing is lost; plain `dvc repro` runs one stage at a time.
TRANSIENT = ("UNIQUE constraint failed: datasets.", "database is locked")


def transient_failure(log: Path) -> str | None:
    """The :data:`TRANSIENT` message a failed stage's log shows, or None."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    return next((t for t in TRANSIENT if t in text), None)


def run_parallel(graph: StageGraph, work: set[str], *, jobs: int, root: str | Path = ".",
                 dvc: Sequence[str] = ("dvc",), log_dir: str | Path = DEFAULT_LOG_DIR,
                 seconds_hint: dict[str, float] | None = None,
                 say: Callable[[str], None] = print, poll_s: float = 0.2,
                 env: dict[str, str] | None = None) -> ReproResult:
    """Run the stages ``work`` with at most ``jobs`` at once, in dependency order; ``env``
    adds variables to the stages' environment."""
    if jobs < 1:
        raise ValueError(f"jobs: expected an int >= 1, found {jobs}")
    unknown = work - set(graph.order)
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; dvc.yaml has {len(graph.order)} stages")
    log_dir = Path(root) / log_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    prio = priorities(graph, work, seconds_hint or {})
    rank = {n: i for i, n in enumerate(graph.order)}
    pending, done, retried = set(work), set(), set()
    running: dict[str, tuple[subprocess.Popen, float, object]] = {}
    seconds: dict[str, float] = {}
    failed: str | None = None
    start = time.perf_counter()
    total = len(work)
    while pending or running:
        if failed is None:
            ready = [n for n in pending if not (graph.upstream[n] & work) - done]
            ready.sort(key=lambda n: (-prio[n], rank[n]))
            for name in ready[: jobs - len(running)]:
                pending.discard(name)
                # A retried stage's log keeps the first attempt's output above the second's.
                log = open(log_dir / _log_name(name), "ab" if name in retried else "wb")  # noqa: SIM115 - closed when the stage ends
                stage_env = {**os.environ, **venv_path(), "PYTHONUNBUFFERED": "1", **(env or {})}
                proc = subprocess.Popen([*dvc, "--wait-for-lock", "repro", "--single-item", name], cwd=root,
                                        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=stage_env)
                running[name] = (proc, time.perf_counter(), log)
                say(f"[{len(done) + len(running)}/{total}] start {name}"
                    + (f"  (running: {', '.join(sorted(running))})" if len(running) > 1 else ""))
        elif not running:
            break
        time.sleep(poll_s)
        for name, (proc, t0, log) in list(running.items()):
            if proc.poll() is None:
                continue
            log.close()  # type: ignore[attr-defined]
            del running[name]
            seconds[name] = round(time.perf_counter() - t0, 1)
            if proc.returncode == 0:
                done.add(name)
                say(f"[{len(done)}/{total}] done  {name} in {seconds[name]:.0f} s")
            elif failed is None and name not in retried and (why := transient_failure(log_dir / _log_name(name))):
                retried.add(name)
                pending.add(name)
                say(f"retrying {name} once: it failed on a tracking-store race ({why!r}), not on its own "
                    f"work; log: {log_dir / _log_name(name)}")
            else:
                failed = failed or name
                say(f"FAILED {name} (exit {proc.returncode}) after {seconds[name]:.0f} s; "
                    f"log: {log_dir / _log_name(name)}\n{_tail(log_dir / _log_name(name))}")
    if failed is not None and pending:
        say(f"not started after the failure: {len(pending)} stage(s)")
    return ReproResult(seconds, failed, round(time.perf_counter() - start, 1), jobs)


@contextlib.contextmanager
def _meteor_server(wanted: bool, say: Callable[[str], None]) -> Iterator[dict[str, str]]:
    """One METEOR server for every stage of the build (``$CLAPCAP_METEOR_SERVER``), so each
    captioning stage skips the 13-s Java start; none when its Java tools are missing (each
    stage then reports the missing metric itself) or nothing runs."""
    from clapcap.errors import AssetError
    from clapcap.evaluation import meteor_jvm

    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if wanted:
            try:
                env[meteor_jvm.SERVER_ENV] = stack.enter_context(meteor_jvm.serving()).address
            except (AssetError, OSError) as err:
                say(f"no shared METEOR server ({err}); each stage starts its own")
        yield env


def read_times(path: str | Path) -> dict[str, float]:
    """Per-stage seconds of the last build (empty when there is none or it is unreadable)."""
    try:
        data = json.loads(Path(path).read_text())
        return {str(k): float(v) for k, v in (data.get("known") or data.get("stages", {})).items()}
    except (OSError, ValueError, AttributeError):
        return {}


STUDIES_DIR = "studies"


def _flow(value: object) -> object:
    """``value`` as ruamel nodes written in flow style (``[a, b]``, ``{k: v}``), like params.yaml's."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        node = CommentedMap((k, _flow(v)) for k, v in value.items())
    elif isinstance(value, list):
        node = CommentedSeq(_flow(v) for v in value)
    else:
        return value
    node.fa.set_flow_style()
    return node


def _study_values(root: str | Path, name: str) -> dict[str, object]:
    import yaml

    path = Path(root) / STUDIES_DIR / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (Path(root) / STUDIES_DIR).glob("*.yaml"))
        raise FileNotFoundError(f"{path}: no such study; known: {', '.join(known) or 'none'}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict) or not all(isinstance(k, str) and k for k in data):
        raise ValueError(f"{path}: expected a mapping of dotted params keys to values")
    return {**data, "study": name}


def _overrides(values: dict[str, object]) -> list[str]:
    import yaml

    return [f"{k}={yaml.safe_dump(v, default_flow_style=True, width=10**6).strip().removesuffix('...').strip()}"
            for k, v in values.items()]


def study_overrides(root: str | Path, name: str) -> list[str]:
    """``studies/<name>.yaml`` as ``dvc exp run -S key=value`` arguments (YAML flow values)."""
    return _overrides(_study_values(root, name))


def stage_outputs(root: str | Path = ".") -> set[str]:
    """Every output path (outs, metrics, plots) of every stage, relative to ``root``."""
    return load_graph(root).outputs


def prune_outputs(root: str | Path, before: set[str], after: set[str]) -> list[str]:
    """Delete the outputs of stages that the pipeline no longer has (``before - after``):
    after ``STUDY=reduced`` the full study's extra rows would otherwise stay on disk, and the
    report, summary and champion selection, which read the results folder, would count them."""
    import shutil

    removed = []
    for rel in sorted(before - after):
        path = Path(root) / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(rel)
    return removed


def write_params(root: str | Path, values: dict[str, object], *, where: str, remove: Sequence[str] = ()) -> None:
    """Set dotted keys of ``params.yaml`` (each value replacing the whole key) and delete the
    dotted keys of ``remove`` where present, round-trip: comments, key order and the style of
    every untouched value stay as written.

    Raises:
        ValueError: naming ``where`` and the key, when a key's parent is not a mapping.
    """
    from ruamel.yaml import YAML

    path = Path(root) / "params.yaml"
    rt = YAML()
    rt.preserve_quotes = True
    rt.width = 4096
    rt.indent(mapping=2, sequence=4, offset=2)
    rt.representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    data = rt.load(path.read_text())
    for key, value in values.items():
        node = data
        *parents, leaf = key.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                raise ValueError(f"{where}: {key}: params.yaml has no mapping {part!r} there")
            node = node[part]
        node[leaf] = _flow(value)
    for key in remove:
        node = data
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            del node[leaf]
    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        rt.dump(data, fh)


def apply_study(root: str | Path, name: str, *, say: Callable[[str], None] | None = None) -> list[str]:
    """Write study ``name``'s values (``studies/<name>.yaml``: dotted key -> value) into
    ``params.yaml``, each value replacing the whole key, and ``study: <name>``.

    A round-trip YAML edit: comments, key order and the style of every untouched value stay
    as written (``dvc exp run -S`` rewrites the whole file's layout, and merges dicts instead
    of replacing them). In a DVC project, the outputs of stages that the new study no longer
    has are deleted (:func:`prune_outputs`). Returns the ``key=value`` changes made.

    Raises:
        FileNotFoundError: naming the studies that exist, when ``name`` is not one.
        ValueError: when the file is not a mapping of dotted keys, or a key's parent is not a mapping.
    """
    values = _study_values(root, name)
    dvc_project = (Path(root) / ".dvc").is_dir()
    before = stage_outputs(root) if dvc_project else set()
    write_params(root, values, where=f"studies/{name}.yaml")
    if dvc_project:
        for rel in prune_outputs(root, before, stage_outputs(root)):
            (say or logger.info)(f"removed {rel}: its stage is not in study {name!r}")
    return _overrides(values)


def prune_lockfile(root: str | Path, stages: Sequence[str]) -> list[str]:
    """Drop the ``dvc.lock`` entries of stages that ``dvc.yaml`` no longer has; return their names.

    DVC keeps a stage's lock entry when a ``foreach`` list shrinks or a stage is renamed, so
    entries of removed stages pile up (41 of 88 here on 2026-12-02, half the file's 13,459
    lines). Every ``dvc repro`` parses and rewrites the whole lockfile, twice per stage: at that
    size 1.5 s a parse on this machine. The file is rewritten round-trip (ruamel, DVC's own
    YAML library), so what stays is byte-for-byte what DVC wrote.
    """
    from ruamel.yaml import YAML

    path = Path(root) / "dvc.lock"
    if not path.is_file():
        return []
    yaml = YAML()
    data = yaml.load(path.read_text())
    entries = data.get("stages") if isinstance(data, dict) else None
    if not entries:
        return []
    stale = [name for name in entries if name not in set(stages)]
    if stale:
        for name in stale:
            del entries[name]
        with atomic_path(path) as tmp:
            yaml.dump(data, tmp)
    return stale


def repro(root: str | Path = ".", *, jobs: int = 2, dvc: Sequence[str] | None = None,
          times_path: str | Path | None = DEFAULT_TIMES, log_dir: str | Path = DEFAULT_LOG_DIR,
          say: Callable[[str], None] = print) -> ReproResult:
    """Bring every stage of the project at ``root`` up to date, ``jobs`` stages at a time.

    With ``jobs=1`` this is plain ``dvc repro``. Writes the per-stage seconds and the wall
    time to ``times_path`` (relative to ``root``) after a build that ran something.

    Raises:
        RuntimeError: when ``dvc status`` fails.
        ValueError: on ``jobs < 1``.
    """
    dvc = list(dvc) if dvc else [str(Path(sys.executable).with_name("dvc"))]
    if jobs < 1:
        raise ValueError(f"jobs: expected an int >= 1, found {jobs}")
    start = time.perf_counter()
    if jobs == 1:
        with _meteor_server(True, say) as env:
            code = subprocess.run([*dvc, "repro"], cwd=root, env={**os.environ, **venv_path(), **STAGE_ENV, **env}).returncode
        return ReproResult({}, None if code == 0 else "dvc repro", round(time.perf_counter() - start, 1), 1)
    graph = load_graph(root)
    if stale := prune_lockfile(root, graph.order):
        say(f"dvc.lock: {len(stale)} entries of stages no longer in dvc.yaml removed")
    hint = read_times(Path(root) / times_path) if times_path else {}
    # Always-changed stages run first, alone; one that reads another stage's output (resolve_checkpoints)
    # does so only when that stage is up to date, else (deferred: a fresh clone) in its place in the work.
    early = {n for n in graph.always_changed if graph.upstream[n] <= graph.always_changed}
    first = run_parallel(graph, early, jobs=1, root=root, dvc=dvc, log_dir=log_dir,
                         seconds_hint=hint, say=say, env=STAGE_ENV)
    if not first.ok:
        return first
    changed = changed_stages(root, dvc) - graph.always_changed
    pending = graph.downstream_closure(changed) - graph.always_changed
    late = graph.always_changed - early
    now = {n for n in late if not graph.upstream[n] & pending}
    if now:
        more = run_parallel(graph, now, jobs=1, root=root, dvc=dvc, log_dir=log_dir,
                            seconds_hint=hint, say=say, env=STAGE_ENV)
        first.seconds.update(more.seconds)
        if not more.ok:
            return more
        changed = changed_stages(root, dvc) - graph.always_changed
    work = graph.downstream_closure(changed | (deferred := late - now)) - (graph.always_changed - deferred)
    say(f"{len(work)} of {len(graph.order)} stages to bring up to date, {jobs} at a time")
    with _meteor_server(bool(work), say) as env:
        result = run_parallel(graph, work, jobs=jobs, root=root, dvc=dvc, log_dir=log_dir, seconds_hint=hint,
                              say=say, env={**STAGE_ENV, **env})
    result.seconds = {**first.seconds, **result.seconds}
    result.wall_s = round(time.perf_counter() - start, 1)
    if result.ok and work and times_path:
        merged = {**hint, **result.seconds}
        write_json(Path(root) / times_path, {
            "what": ("the last build that ran stages (make repro): seconds per stage it ran and its wall time; "
                     "`known` adds the latest seconds of every other stage (the scheduler's weights)"),
            "jobs": jobs, "wall_s": result.wall_s, "stages_run": len(result.seconds),
            "machine": machine_record(),  # measured after the build, on a quiet machine
            "stages": {n: result.seconds[n] for n in graph.order if n in result.seconds},
            "known": {n: merged[n] for n in graph.order if n in merged}})
    say(f"{'built' if result.ok else 'stopped'}: {len(result.seconds)} stage(s) in {result.wall_s:.0f} s")
    return result
