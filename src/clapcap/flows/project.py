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
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from clapcap.config import ConfigError, from_dict, load_section, read_params

T = TypeVar("T")

ROOT_ENV = "CLAPCAP_PROJECT_ROOT"

# Keys whose string values (or list items, or mapping values) are paths under the project.
PATH_KEYS = frozenset({
    "out_dir", "dataset_dir", "split_dir", "paraphrase_dir", "results_dir", "dump", "dumps",
    "datasets", "cache_path", "env_file", "predictions_file", "train_dump", "test_dump",
    "split_json", "conclusions", "findings_md", "parity_out", "memo_path",
})
# Keys that may name a Hugging Face Hub model instead of a path: resolved only when their first
# path component exists under the root (``models/default_clap/model``, not ``laion/clap``).
MAYBE_HUB_KEYS = frozenset({"checkpoint", "pretrained_dir", "base_model", "models"})


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


def resolve_paths(section: Any, root: Path) -> Any:
    """A copy of a raw params section with every relative path under ``root`` made absolute.

    Keys in :data:`PATH_KEYS` are always resolved (outputs may not exist yet); keys in
    :data:`MAYBE_HUB_KEYS` only when their first component exists under ``root``. Empty
    strings, absolute paths and URIs (``s3://``) are kept.
    """
    if isinstance(section, list):
        return [resolve_paths(item, root) for item in section]
    if not isinstance(section, dict):
        return section
    out: dict[str, Any] = {}
    for key, value in section.items():
        if key in PATH_KEYS or key in MAYBE_HUB_KEYS:
            hub = key in MAYBE_HUB_KEYS
            if isinstance(value, list):
                value = [_resolve_one(v, root, hub) for v in value]
            elif isinstance(value, dict):
                value = {k: resolve_paths(v, root) if isinstance(v, dict) else _resolve_one(v, root, hub)
                         for k, v in value.items()}
            else:
                value = _resolve_one(value, root, hub)
        out[key] = resolve_paths(value, root)
    return out


def load_project_section(cls: type[T], section: str, params_file: str | Path = "params.yaml") -> T:
    """Parse one params section into ``cls`` with its paths resolved against the project root.

    Raises:
        ConfigError: as :func:`clapcap.config.load_section` (file, 1-based line, expected).
    """
    path = params_path(params_file)
    load_section(cls, section, path)  # validates, with file:line in any error
    try:
        return from_dict(cls, resolve_paths(read_params(path)[section], project_root(path)), where=section)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}", key=err.key) from err


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
