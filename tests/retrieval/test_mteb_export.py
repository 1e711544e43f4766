"""MTEB TaskResult export: schema, values, provenance, bytes, errors, entry points.

The schema checks mirror mteb's own (``mteb/results/task_result.py`` at a905523: the model
fields and ``_validate_scores_dict``). mteb is not a clapcap dependency (it would downgrade a pinned fsspec): the test that runs
``tools/check_mteb_export.py`` with mteb's own loader and evaluator is marked ``mteb``
(deselected by default; ``CLAPCAP_MTEB_PYTHON=/path/to/python pytest -m mteb``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clapcap.cli import main as cli_main
from clapcap.data.dump import DumpError, load_dump, save_dump
from clapcap.entry import run_script
from clapcap.retrieval.ir_metrics import ir_per_query
from clapcap.retrieval.metrics import evaluate_dump, ranked_dump
from clapcap.retrieval.mteb_export import (
    MTEB_KS,
    evaluation_set_revision,
    export_dump,
    task_name,
    task_results,
)
from clapcap.utils.io import read_json

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = {"hit_rate": "r", "map": "map", "ndcg": "ndcg", "mrr": "mrr", "recall": "recall",
            "precision": "precision"}
TOP_LEVEL = ["dataset_revision", "task_name", "mteb_version", "scores", "evaluation_time",
             "kg_co2_emissions", "date", "evaluation_phases", "clapcap"]


def _dump_file(tmp_path: Path, make_dump, name: str = "test.npz", **kwargs) -> Path:
    dump = make_dump(n_clips=kwargs.pop("n_clips", 24), captions_per_clip=kwargs.pop("counts", [1, 2, 3, 5] * 6),
                     noise=1.0, **kwargs)
    dump.meta.update(dataset="data/corpus", split="test")
    return save_dump(dump, tmp_path / name)


def _mteb_schema_problems(data: dict) -> list[str]:
    """mteb TaskResult's field types and ``_validate_scores_dict``, restated."""
    problems = []
    for key, kinds in (("dataset_revision", (str,)), ("task_name", (str,)), ("mteb_version", (str, type(None))),
                       ("evaluation_time", (float, int, type(None))), ("scores", (dict,))):
        if key not in data or not isinstance(data[key], kinds):
            problems.append(f"{key}: expected {kinds}, found {data.get(key)!r}")
    for split, subsets in data.get("scores", {}).items():
        if not isinstance(split, str) or not isinstance(subsets, list):
            problems.append(f"scores[{split!r}]: expected a list")
            continue
        for s in subsets:
            if "main_score" not in s or not isinstance(s.get("hf_subset"), str) \
                    or not isinstance(s.get("languages"), list):
                problems.append(f"scores[{split!r}]: subset lacks main_score, hf_subset or languages")
    return problems


def test_export_writes_two_task_results_with_clapcap_values(tmp_path, make_dump):
    path = _dump_file(tmp_path, make_dump, seed=2)
    written = export_dump(path, tmp_path / "mteb")
    assert {d: p.name for d, p in written.items()} == {
        "t2a": "ClapcapCorpusT2ARetrieval.json", "a2t": "ClapcapCorpusA2TRetrieval.json"}
    dump = load_dump(path)
    ranked = ranked_dump(dump)
    harness = evaluate_dump(dump, ks=(1, 5, 10))
    for direction, n in (("t2a", dump.n_captions), ("a2t", dump.n_clips)):
        data = read_json(written[direction])
        assert list(data) == TOP_LEVEL and _mteb_schema_problems(data) == []
        assert (data["mteb_version"], data["evaluation_time"], data["date"]) == (None, None, None)
        assert data["dataset_revision"] == evaluation_set_revision(dump)
        assert list(data["scores"]) == ["test"] and len(data["scores"]["test"]) == 1
        subset = data["scores"]["test"][0]
        assert (subset["hf_subset"], subset["languages"]) == ("default", ["eng-Latn"])
        metric_keys = [k for k in subset if k not in ("hf_subset", "languages", "main_score")]
        assert metric_keys == [f"{m}_at_{k}" for m in FAMILIES for k in MTEB_KS]
        per_query = ir_per_query(ranked[direction], n, MTEB_KS)
        for key in metric_keys:
            family, k = key.rsplit("_at_", 1)
            assert subset[key] == float(np.mean(per_query[f"{FAMILIES[family]}@{k}"])), key
        assert subset["main_score"] == subset["ndcg_at_10"]
        for k in (1, 5, 10):  # hit_rate_at_k is clapcap's r@k, same number
            assert subset[f"hit_rate_at_{k}"] == harness[direction][f"r@{k}"]
        assert subset["map_at_10"] == harness[direction]["map@10"]
        assert data["clapcap"]["n_queries"] == n and data["clapcap"]["direction"] == direction
    a2t = read_json(written["a2t"])["scores"]["test"][0]
    assert a2t["recall_at_1"] < a2t["hit_rate_at_1"]  # several positives per clip
    assert a2t["precision_at_1000"] == pytest.approx(dump.n_captions / dump.n_clips / 1000)  # k not clipped


def test_bytes_depend_on_content_only(tmp_path, make_dump):
    one = _dump_file(tmp_path / "a" / "deep", make_dump, seed=1)
    two = tmp_path / "b" / "test.npz"
    two.parent.mkdir(parents=True)
    shutil.copy(one, two)
    first, second = export_dump(one, tmp_path / "out1"), export_dump(two, tmp_path / "out2")
    for direction in ("t2a", "a2t"):
        text = first[direction].read_bytes()
        assert text == second[direction].read_bytes()
        assert str(tmp_path).encode() not in text
    assert sorted(p.name for p in (tmp_path / "out1").iterdir()) == sorted(
        p.name for p in first.values())  # no temporary file left


def test_dataset_revision_is_the_evaluation_set_not_the_embeddings(tmp_path, make_dump):
    a = load_dump(_dump_file(tmp_path, make_dump, "a.npz", seed=1))
    b = load_dump(_dump_file(tmp_path, make_dump, "b.npz", seed=9))  # other embeddings, same set
    assert evaluation_set_revision(a) == evaluation_set_revision(b)
    b.captions[0] = "another caption"
    assert evaluation_set_revision(a) != evaluation_set_revision(b)
    pa = read_json(export_dump(tmp_path / "a.npz", tmp_path / "oa")["t2a"])
    pb = read_json(export_dump(tmp_path / "b.npz", tmp_path / "ob")["t2a"])
    assert pa["dataset_revision"] == pb["dataset_revision"]
    assert pa["clapcap"]["dump_sha256"] != pb["clapcap"]["dump_sha256"]


def test_options_main_score_dataset_split(tmp_path, make_dump):
    path = _dump_file(tmp_path, make_dump, seed=3)
    written = export_dump(path, tmp_path / "o", main_score="hit_rate_at_5", dataset="clotho_v2", split="val",
                          ks=(1, 5))
    data = read_json(written["a2t"])
    assert data["task_name"] == "ClapcapClothoV2A2TRetrieval"
    subset = data["scores"]["val"][0]
    assert subset["main_score"] == subset["hit_rate_at_5"] and "ndcg_at_10" not in subset


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"main_score": "ndcg_at_7"}, ValueError, "main_score: expected one of"),
    ({"main_score": "accuracy"}, ValueError, "main_score"),
    ({"ks": (0, 10)}, ValueError, "ks: expected positive"),
    ({"ks": (10, 10)}, ValueError, "distinct"),
])
def test_bad_options_write_nothing(tmp_path, make_dump, kwargs, error, message):
    path = _dump_file(tmp_path, make_dump)
    with pytest.raises(error, match=message):
        export_dump(path, tmp_path / "o", **kwargs)
    assert not (tmp_path / "o").exists()


def test_bad_dumps(tmp_path, make_dump):
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        export_dump(tmp_path / "missing.npz", tmp_path / "o")
    dump = make_dump(n_clips=4, captions_per_clip=1)
    dump.caption_clip_index = np.array([0, 0, 1, 2])  # clip 3 has no caption
    save_dump(dump, tmp_path / "uncaptioned.npz")
    with pytest.raises(DumpError, match="has no caption"):
        export_dump(tmp_path / "uncaptioned.npz", tmp_path / "o")
    dump = make_dump(n_clips=4, captions_per_clip=1)
    dump.meta["split"] = 3
    save_dump(dump, tmp_path / "badsplit.npz")
    with pytest.raises(ValueError, match="meta 'split': expected a non-empty string"):
        export_dump(tmp_path / "badsplit.npz", tmp_path / "o")


def test_task_names_and_task_results_checks(make_dump):
    assert task_name("corpus", "t2a") == "ClapcapCorpusT2ARetrieval"
    assert task_name("audio-caps test", "a2t") == "ClapcapAudioCapsTestA2TRetrieval"
    with pytest.raises(ValueError, match="direction"):
        task_name("corpus", "a2l")
    ranked = ranked_dump(make_dump(n_clips=5, captions_per_clip=2))
    with pytest.raises(ValueError, match="expected keys"):
        task_results({"t2a": ranked["t2a"]}, {"t2a": 10}, dataset="x", dataset_revision="r")
    with pytest.raises(ValueError, match="non-empty"):
        task_results(ranked, {"t2a": 10, "a2t": 5}, dataset="x", dataset_revision="")
    with pytest.raises(ValueError, match="query 5 has no positive"):
        task_results(ranked, {"t2a": 10, "a2t": 6}, dataset="x", dataset_revision="r")


def test_pipeline_and_cli(tmp_path, make_dump, capsys):
    spec = importlib.util.spec_from_file_location("pipeline_export_mteb", ROOT / "pipelines" / "export_mteb.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = _dump_file(tmp_path, make_dump)
    assert run_script(module.main, module.arguments, argv=[str(path), "--out-dir", str(tmp_path / "p")]) == 0
    assert cli_main(["retrieval", "export-mteb", str(path), "--out-dir", str(tmp_path / "c")]) == 0
    assert "ClapcapCorpusT2ARetrieval.json" in capsys.readouterr().out
    for name in ("ClapcapCorpusT2ARetrieval.json", "ClapcapCorpusA2TRetrieval.json"):
        assert (tmp_path / "p" / name).read_bytes() == (tmp_path / "c" / name).read_bytes()
    assert run_script(module.main, module.arguments, argv=[str(tmp_path / "nope.npz"), "--out-dir", "x"]) == 2
    assert cli_main(["retrieval", "export-mteb", str(path), "--out-dir", str(tmp_path / "d"),
                     "--main-score", "bogus"]) == 2


def test_check_tool_says_when_its_python_has_no_mteb(tmp_path, make_dump):
    """Without mteb the tool exits 2 and says so (the project's venv has no mteb: it would
    downgrade a pinned fsspec)."""
    written = export_dump(_dump_file(tmp_path, make_dump), tmp_path / "o")
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "check_mteb_export.py"),
                          *(str(p) for p in written.values())], capture_output=True, text=True, check=False)
    has_mteb = importlib.util.find_spec("mteb") is not None
    assert run.returncode == (0 if has_mteb else 2), run.stderr
    if not has_mteb:
        assert "mteb" in run.stderr


@pytest.mark.mteb
def test_check_tool(tmp_path, make_dump):
    """mteb's own loader and evaluator on the exported files: selected with ``-m mteb`` and
    ``CLAPCAP_MTEB_PYTHON`` naming a Python with mteb (a venv of its own, docs/retrieval_metrics.md)."""
    python = os.environ.get("CLAPCAP_MTEB_PYTHON")
    assert python, "set CLAPCAP_MTEB_PYTHON to a Python with mteb installed (pip install mteb in a venv of its own)"
    dump = _dump_file(tmp_path, make_dump)
    written = export_dump(dump, tmp_path / "o")
    files = [str(p) for p in written.values()]
    broken = tmp_path / "broken.json"
    data = json.loads(Path(files[0]).read_text())
    del data["scores"]["test"][0]["main_score"]
    broken.write_text(json.dumps(data))
    tool = [python, str(ROOT / "tools" / "check_mteb_export.py")]
    # mteb's loader, then MTEB's own evaluator recomputing every score from the dump
    run = subprocess.run([*tool, "--dump", str(dump), *files], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout.count(": OK") == 2, run.stdout + run.stderr
    other = _dump_file(tmp_path, make_dump, "other.npz", seed=11)
    run = subprocess.run([*tool, "--dump", str(other), *files], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "MTEB's evaluator" in run.stdout, run.stdout + run.stderr
    run = subprocess.run([*tool, str(broken)], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "main_score" in run.stdout, run.stdout + run.stderr
