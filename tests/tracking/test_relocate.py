"""A copied local MLflow store reads its own artifacts after ``clapcap registry relocate-store``
(clapcap.tracking.relocate): runs, logged models and registered versions."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys

import pytest

from clapcap.cli import main
from clapcap.errors import InputError
from clapcap.tracking.relocate import relocate_store

_BUILD = """
import mlflow, sys
from pathlib import Path
from clapcap import tracking
from clapcap.tracking.store import open_store
root = Path(sys.argv[1])
uri = f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"
(root / 'mlruns').mkdir(parents=True)
mlflow.set_tracking_uri(uri)
exp = open_store(uri, "clapcap-test")
with mlflow.start_run(experiment_id=exp) as run:
    (root / "note.txt").write_text("hello")
    mlflow.log_artifact(str(root / "note.txt"))
    info = mlflow.pyfunc.log_model(name="model", python_model=mlflow.pyfunc.PythonModel(),
                                   registered_model_name="clapcap-test-model")
print(run.info.run_id)
"""


def _store(root):
    out = subprocess.run([sys.executable, "-c", _BUILD, str(root)], check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def _paths(db) -> list[str]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT artifact_location FROM experiments UNION ALL SELECT artifact_uri FROM runs "
                           "UNION ALL SELECT source FROM model_versions UNION ALL SELECT storage_location "
                           "FROM model_versions").fetchall()
    finally:
        con.close()
    return [r[0] for r in rows if r[0]]


def test_a_copied_store_reads_its_own_artifacts(tmp_path, capsys, monkeypatch):
    run_id = _store(tmp_path / "a")
    shutil.copytree(tmp_path / "a" / "mlruns", tmp_path / "b" / "mlruns")
    shutil.rmtree(tmp_path / "a")  # the original checkout is gone
    db = tmp_path / "b" / "mlruns" / "mlflow.db"
    assert any(str(tmp_path / "a") in p for p in _paths(db))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["registry", "relocate-store", str(db)]) == 0
    assert "artifact locations now under" in capsys.readouterr().out
    assert all(str(tmp_path / "a") not in p for p in _paths(db))
    assert sum(p.startswith((tmp_path / "b").as_uri()) for p in _paths(db)) >= 3  # experiment, run, version
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{db}")
    note = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="note.txt", dst_path=str(tmp_path / "dl"))
    assert open(note).read() == "hello"
    assert mlflow.pyfunc.load_model("models:/clapcap-test-model/1") is not None
    assert relocate_store(db) == {}  # a second run changes nothing


def test_bad_stores_are_refused(tmp_path):
    with pytest.raises(InputError, match="no such MLflow SQLite store"):
        relocate_store(tmp_path / "none.db")
    (tmp_path / "artifacts").mkdir()
    sqlite3.connect(tmp_path / "x.db").execute("CREATE TABLE t (a TEXT)").connection.close()
    with pytest.raises(InputError, match="not an MLflow store"):
        relocate_store(tmp_path / "x.db")
