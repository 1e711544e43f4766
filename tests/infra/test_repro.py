"""The side-by-side scheduler over DVC: order, overlap, skips, failures, and dvc.lock."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from dvc_repo import DVC, dvc_env, init_repo  # tests/support/dvc_repo.py

from clapcap.repro import (
    StageGraph,
    changed_stages,
    load_graph,
    priorities,
    prune_lockfile,
    repro,
    run_parallel,
)

pytestmark = pytest.mark.distributed  # real `dvc` processes side by side (make test-distributed)


def _stage(cmd: str, deps: list[str], outs: list[str]) -> dict:
    return {"cmd": cmd, "deps": deps, "outs": outs}


def _sleep_write(name: str, seconds: float, deps: list[str]) -> str:
    # Record start and end times, so the test can see which stages overlapped.
    reads = "".join(f"open('{d}').read();" for d in deps)
    return (f"{sys.executable} -c \"import time,json;{reads}t=time.time();time.sleep({seconds});"
            f"open('{name}.txt','w').write(json.dumps([t,time.time()]))\"")


@pytest.fixture
def project(tmp_path):
    env = dvc_env(f"sqlite:///{tmp_path}/mlflow.db")
    stages = {
        "listing": {"cmd": "echo same > listing.txt", "outs": [{"listing.txt": {"cache": False}}],
                    "always_changed": True},
        "a": _stage(_sleep_write("a", 3, ["listing.txt"]), ["listing.txt"], ["a.txt"]),
        "b": _stage(_sleep_write("b", 3, ["listing.txt"]), ["listing.txt"], ["b.txt"]),
        "c": _stage(_sleep_write("c", 0.1, ["a.txt", "b.txt"]), ["a.txt", "b.txt"], ["c.txt"]),
    }
    init_repo(tmp_path, {"x": 1}, stages, env, "pipeline")
    return tmp_path, env


def _span(root: Path, name: str) -> tuple[float, float]:
    return tuple(json.loads((root / f"{name}.txt").read_text()))


def test_graph_and_changed_stages(project, monkeypatch):
    root, env = project
    monkeypatch.setenv("PATH", env["PATH"])
    graph = load_graph(root)
    assert sorted(graph.order) == ["a", "b", "c", "listing"]
    assert graph.upstream == {"listing": set(), "a": {"listing"}, "b": {"listing"}, "c": {"a", "b"}}
    assert graph.always_changed == {"listing"}
    assert changed_stages(root, DVC) == {"listing", "a", "b", "c"}
    assert graph.downstream_closure({"a"}) == {"a", "c"}


def test_independent_stages_overlap_and_dvc_records_every_stage(project, monkeypatch):
    root, env = project
    monkeypatch.setenv("PATH", env["PATH"])
    lines: list[str] = []
    result = repro(root, jobs=2, dvc=DVC, say=lines.append)
    assert result.ok, "\n".join(lines)
    (a0, a1), (b0, b1), (c0, _) = _span(root, "a"), _span(root, "b"), _span(root, "c")
    assert a0 < b1 and b0 < a1, "a and b did not run side by side"
    assert c0 >= max(a1, b1), "c started before both of its inputs were written"
    assert changed_stages(root, DVC) == {"listing"}  # only the always-changed stage
    lock = (root / "dvc.lock").read_text()
    assert all(f"  {s}:" in lock for s in ("listing", "a", "b", "c"))
    times = json.loads((root / "reports/build_times.json").read_text())
    assert set(times["stages"]) == {"listing", "a", "b", "c"} and times["jobs"] == 2
    # A second build runs only the always-changed stage: nothing downstream changed.
    again: list[str] = []
    t0 = time.perf_counter()
    assert repro(root, jobs=2, dvc=DVC, say=again.append).ok
    assert any("0 of 4 stages" in ln for ln in again), again
    assert time.perf_counter() - t0 < 60
    # Editing one stage's input reruns it and what depends on it, nothing else.
    b_before = _span(root, "b")
    (root / "dvc.yaml").write_text((root / "dvc.yaml").read_text().replace("time.sleep(3)", "time.sleep(1)", 1))
    third: list[str] = []
    assert repro(root, jobs=2, dvc=DVC, say=third.append).ok
    assert any("2 of 4 stages" in ln for ln in third), third
    assert _span(root, "b") == b_before


def test_lock_entries_of_removed_stages_are_pruned_and_the_rest_kept(project, monkeypatch):
    root, env = project
    monkeypatch.setenv("PATH", env["PATH"])
    assert repro(root, jobs=2, dvc=DVC, say=lambda _: None).ok
    lock = root / "dvc.lock"
    kept = lock.read_text()
    stale = kept.replace("stages:\n", "stages:\n  old@0:\n    cmd: echo gone\n  old@1:\n    cmd: echo gone\n", 1)
    lock.write_text(stale)
    lines: list[str] = []
    assert repro(root, jobs=2, dvc=DVC, say=lines.append).ok
    assert any("2 entries of stages no longer in dvc.yaml removed" in ln for ln in lines), lines
    assert any("0 of 4 stages" in ln for ln in lines), lines  # the kept entries still say up to date
    assert "old@" not in lock.read_text() and lock.read_text() == kept
    assert prune_lockfile(root, ["a", "b", "c", "listing"]) == [] and lock.read_text() == kept
    assert prune_lockfile(root / "nowhere", ["a"]) == []


def test_a_failed_stage_stops_new_launches_and_shows_its_log(project, monkeypatch):
    root, env = project
    monkeypatch.setenv("PATH", env["PATH"])
    text = (root / "dvc.yaml").read_text().replace("time.sleep(3)", "time.sleep(0.2);1/0", 1)
    (root / "dvc.yaml").write_text(text)
    lines: list[str] = []
    result = repro(root, jobs=2, dvc=DVC, say=lines.append, times_path=None)
    assert not result.ok and result.failed == "a"
    out = "\n".join(lines)
    assert "FAILED a" in out and "ZeroDivisionError" in out
    assert not (root / "c.txt").exists()


def test_a_stage_that_lost_a_tracking_store_race_runs_again_once(project, monkeypatch):
    """MLflow's dataset insert from two stages at once: the loser's failure is not its own."""
    root, env = project
    monkeypatch.setenv("PATH", env["PATH"])
    race = ("import os,sys;m='raced.flag';first=not os.path.exists(m);open(m,'a').close();"
            "first and sys.exit('UNIQUE constraint failed'+chr(58)+' datasets.experiment_id')")  # no ': ' in YAML
    text = (root / "dvc.yaml").read_text().replace('-c "import time,json;', f'-c "{race};import time,json;', 1)
    (root / "dvc.yaml").write_text(text)
    lines: list[str] = []
    result = repro(root, jobs=2, dvc=DVC, say=lines.append, times_path=None)
    out = "\n".join(lines)
    assert result.ok, out
    assert "retrying a once" in out and (root / "c.txt").exists()
    log = (root / ".dvc/tmp/repro/a.log").read_text()
    assert "UNIQUE constraint failed" in log  # the first attempt's output is kept above the second's
    # Twice is not a race: the second failure stops the build.
    (root / "raced.flag").unlink()
    text = (root / "dvc.yaml").read_text().replace("first and sys.exit", "sys.exit", 1)
    (root / "dvc.yaml").write_text(text)
    lines.clear()
    result = repro(root, jobs=2, dvc=DVC, say=lines.append, times_path=None)
    assert not result.ok and result.failed == "a" and "FAILED a" in "\n".join(lines)


def test_priorities_follow_the_longest_chain():
    graph = StageGraph(["x", "long", "short", "end"],
                       {"x": set(), "long": {"x"}, "short": {"x"}, "end": {"long"}})
    prio = priorities(graph, {"x", "long", "short", "end"}, {"long": 100.0})
    assert prio["long"] > prio["short"]
    assert prio["x"] == 1 + 100 + 1


def test_bad_jobs_and_unknown_stages_are_refused():
    graph = StageGraph(["a"], {"a": set()})
    with pytest.raises(ValueError, match="jobs"):
        run_parallel(graph, {"a"}, jobs=0)
    with pytest.raises(ValueError, match="unknown stage"):
        run_parallel(graph, {"zz"}, jobs=1)


def test_an_always_changed_stage_that_reads_another_stages_output_waits_for_it(tmp_path, monkeypatch):
    """resolve_checkpoints' shape: always changed, reading what train_clap writes. On a fresh
    clone it must run after that stage (it failed the build when run first, alone); once
    everything is up to date it runs first and nothing else reruns."""
    env = dvc_env(f"sqlite:///{tmp_path}/mlflow.db")
    stages = {
        "listing": {"cmd": "echo same > listing.txt", "outs": [{"listing.txt": {"cache": False}}],
                    "always_changed": True},
        "train": _stage(_sleep_write("train", 0.1, ["listing.txt"]), ["listing.txt"], ["train.txt"]),
        "record": {"cmd": f"{sys.executable} -c \"open('record.txt','w').write(str(len(open('train.txt').read())))\"",
                   "deps": ["train.txt"], "outs": [{"record.txt": {"cache": False}}], "always_changed": True},
        "use": _stage(_sleep_write("use", 0.1, ["record.txt"]), ["record.txt"], ["use.txt"]),
    }
    init_repo(tmp_path, {"x": 1}, stages, env, "pipeline")
    monkeypatch.setenv("PATH", env["PATH"])
    lines: list[str] = []
    result = repro(tmp_path, jobs=2, dvc=DVC, say=lines.append)
    assert result.ok, "\n".join(lines)
    assert any("3 of 4 stages" in ln for ln in lines), lines  # train, then record in its place, then use
    assert _span(tmp_path, "train")[1] <= (tmp_path / "record.txt").stat().st_mtime
    use_before = _span(tmp_path, "use")
    again: list[str] = []
    assert repro(tmp_path, jobs=2, dvc=DVC, say=again.append).ok
    assert any("0 of 4 stages" in ln for ln in again), again  # record ran first; its output is unchanged
    assert _span(tmp_path, "use") == use_before
