"""The tracking store: URI, experiments, params (the base of :mod:`clapcap.tracking`)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clapcap.utils.urls import redact_url

logger = logging.getLogger(__name__)

_SECRET = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.IGNORECASE)
_UNSAFE = re.compile(r"[^0-9A-Za-z_\-. /]")


def default_tracking_uri(project_root: str | Path | None = None) -> str:
    """The tracking URI: ``$MLFLOW_TRACKING_URI`` or ``sqlite:///<root>/mlruns/mlflow.db``."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    root = Path(project_root or Path.cwd()).resolve()
    (root / "mlruns").mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{root / 'mlruns' / 'mlflow.db'}"


def safe_key(key: str) -> str:
    """Map a readable metric name to an MLflow-safe key (``t2a/R@1`` -> ``t2a/R1``)."""
    key = key.replace("@", "")
    return _UNSAFE.sub("_", key)


def flatten(data: Mapping[str, Any], prefix: str = "", sep: str = "/") -> dict[str, Any]:
    """Flatten nested mappings into ``a/b/c`` keys."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{sep}{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten(value, name, sep))
        else:
            out[name] = value
    return out


def _mlflow():
    # MLflow draws a download bar for every artifact it fetches (a model load, `registry
    # compare`), on stderr between the command's own lines; the commands say what they fetch.
    # A user who wants the bars sets the variable.
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow  # heavy import kept out of module import time

    return mlflow


def _ensure_experiment(name: str) -> str:
    mlflow = _mlflow()
    exp = mlflow.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    artifact_location = None
    uri = mlflow.get_tracking_uri()
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///"):])
        artifact_location = (db.parent / "artifacts").resolve().as_uri()
    try:
        return mlflow.create_experiment(name, artifact_location=artifact_location)
    except mlflow.exceptions.MlflowException:
        exp = mlflow.get_experiment_by_name(name)  # another process created it meanwhile
        if exp is None:
            raise
        return exp.experiment_id


@contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """Hold an exclusive file lock beside a local SQLite store (``<db>.lock``).

    MLflow creates a fresh SQLite store's tables on first use; two processes doing that at
    once (two workers, two queued DVC experiments) fail with ``table ... already exists``.
    Other stores (a tracking server, PostgreSQL) serialise this themselves: no lock.
    """
    if not uri.startswith("sqlite:///"):
        yield
        return
    import fcntl

    db = Path(uri[len("sqlite:///"):])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def open_store(uri: str, experiment: str) -> str:
    """Point MLflow at ``uri`` and return ``experiment``'s id, creating store and experiment once."""
    mlflow = _mlflow()
    mlflow.set_tracking_uri(uri)
    with _store_lock(uri):
        return _ensure_experiment(experiment)


def prepare_store(experiments: Sequence[str], tracking_uri: str | None = None) -> str:
    """Create the tracking store's tables and ``experiments`` once, before work fans out.

    Opening a store is serialised per SQLite file (:func:`_store_lock`) and creating an
    experiment tolerates a concurrent creator; a dispatcher still calls this first so that its
    workers only add runs.

    Returns:
        The tracking URI used (``tracking_uri`` or :func:`default_tracking_uri`).
    """
    uri = tracking_uri or default_tracking_uri()
    for name in experiments:
        open_store(uri, name)
    return uri


def clean_params(params: Mapping[str, Any]) -> dict[str, str]:
    """Flattened params with MLflow-safe names, credential-like keys dropped, values as text
    with the user-info of any URL redacted (MLflow caps a value at 6000 characters)."""
    flat = {k: v for k, v in flatten(params).items() if not _SECRET.search(k)}
    return {safe_key(k): redact_url(str(v))[:6000] for k, v in flat.items()}


def log_params(params: Mapping[str, Any]) -> None:
    """Log (flattened) params to the active run, dropping credential-like keys and URL user-info."""
    _mlflow().log_params(clean_params(params))
