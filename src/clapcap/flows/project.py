"""Where a deployed flow finds the project: params.yaml, its paths, the MLflow store.

A worker's flow run may start in any directory (a process worker's pull step, a container's
``WORKDIR``). The deployed flows therefore never rely on the current directory:

- the **project root** is ``$CLAPCAP_PROJECT_ROOT`` when set, else the folder of the params
  file (a relative params file is taken under ``$CLAPCAP_PROJECT_ROOT`` or the current
  directory);
- every relative path in a params section (``out_dir``, ``dataset_dir``, dumps, checkpoints,
  ...) is resolved against that root (:func:`resolve_paths`), so results land in the same
  DVC-tracked folders as ``dvc repro``;
- MLflow logs to ``$MLFLOW_TRACKING_URI`` (a team's server), else to the project's own store
  ``<root>/mlruns/mlflow.db``, which is where ``dvc repro`` logs (:func:`project_tracking`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from clapcap.config import load_section

T = TypeVar("T")

ROOT_ENV = "CLAPCAP_PROJECT_ROOT"

# Keys whose string values (or list items, or mapping values) are paths under the project.
PATH_KEYS = frozenset({
    "out_dir", "dataset_dir", "split_dir", "paraphrase_dir", "results_dir", "dump", "dumps",
    "datasets", "cache_path", "env_file", "predictions_file", "train_dump", "test_dump",
    "split_json", "conclusions", "findings_md", "parity_out", "memo_path",
})
# Keys that may name a Hugging Face Hub model instead of a path: resolved only when their first
# path component exists under the root (``models/synth_clap/model``, not ``laion/clap``).
MAYBE_HUB_KEYS = frozenset({"checkpoint", "pretrained", "pretrained_dir", "base_model", "models"})


def project_root(params_file: str | Path = "params.yaml") -> Path:
    """The project root: ``$CLAPCAP_PROJECT_ROOT``, else the params file's folder (absolute)."""
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return Path(params_file).expanduser().resolve().parent


def params_path(params_file: str | Path = "params.yaml") -> Path:
    """The absolute params file: a relative one is taken under ``$CLAPCAP_PROJECT_ROOT`` if set."""
    path = Path(params_file).expanduser()
    env = os.environ.get(ROOT_ENV)
    if not path.is_absolute() and env:
        path = Path(env).expanduser() / path
    return path.resolve()


def _resolve_one(value: Any, root: Path, maybe_hub: bool) -> Any:
    if not isinstance(value, str) or not value or Path(value).is_absolute() or "://" in value:
        return value
    if maybe_hub and not (root / Path(value).parts[0]).exists():
        return value
    return str(root / value)


def _resolve_value(key: str, value: Any, root: Path) -> Any:
    if key not in PATH_KEYS and key not in MAYBE_HUB_KEYS:
        return resolve_paths(value, root)
    hub = key in MAYBE_HUB_KEYS
    if isinstance(value, list):
        return [_resolve_one(v, root, hub) for v in value]
    if isinstance(value, dict):
        return {k: _resolve_one(v, root, hub) if isinstance(v, str) else resolve_paths(v, root)
                for k, v in value.items()}
    if isinstance(value, str):
        return _resolve_one(value, root, hub)
    return resolve_paths(value, root)


def resolve_paths(section: Any, root: Path) -> Any:
    """A copy of a params section (raw mapping or parsed dataclass) with every relative path
    under ``root`` made absolute, defaults included.

    Keys in :data:`PATH_KEYS` are always resolved (outputs may not exist yet); keys in
    :data:`MAYBE_HUB_KEYS` only when their first component exists under ``root``. Empty
    strings, absolute paths and URIs (``s3://``) are kept.
    """
    if dataclasses.is_dataclass(section) and not isinstance(section, type):
        out = copy.copy(section)
        for f in dataclasses.fields(section):
            object.__setattr__(out, f.name, _resolve_value(f.name, getattr(section, f.name), root))
        return out
    if isinstance(section, list):
        return [resolve_paths(item, root) for item in section]
    if isinstance(section, dict):
        return {key: _resolve_value(str(key), value, root) for key, value in section.items()}
    return section


def load_project_section(cls: type[T], section: str, params_file: str | Path = "params.yaml") -> T:
    """Parse one params section into ``cls`` with its paths (defaults included) resolved
    against the project root.

    Raises:
        ConfigError: as :func:`clapcap.config.load_section` (file, 1-based line, expected).
    """
    path = params_path(params_file)
    return resolve_paths(load_section(cls, section, path), project_root(path))


@contextlib.contextmanager
def project_tracking(params_file: str | Path = "params.yaml") -> Iterator[str]:
    """Point MLflow at ``$MLFLOW_TRACKING_URI``, else the project's store, for the ``with`` body.

    Yields the tracking URI. The environment is restored afterwards, so an in-process caller
    (a test, a notebook) is left as it was.
    """
    before = os.environ.get("MLFLOW_TRACKING_URI")
    if before:
        yield before
        return
    from clapcap.tracking import default_tracking_uri

    uri = default_tracking_uri(project_root(params_path(params_file)))
    os.environ["MLFLOW_TRACKING_URI"] = uri
    try:
        yield uri
    finally:
        os.environ.pop("MLFLOW_TRACKING_URI", None)
