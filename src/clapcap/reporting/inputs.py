"""Input files of the report: one simple JSON schema per table (see docs/reports.md).

A *table input* is a JSON file holding either a list of rows or an object
``{"rows": [...], "metrics": [...], "lower_is_better": [...], "title": "...",
"primary": "..."}``. A row is::

    {"name": "gpt2-best",              # required
     "metrics": {"CIDEr-D": 0.41},     # metric name -> number (required unless "seeds")
     "std": {"CIDEr-D": 0.01},         # optional
     "seeds": [{"CIDEr-D": 0.40}, ...],# optional: per-seed metrics; mean/std derived
     "leaky": false,                   # optional: may have seen test data
     "group": "gpt2",                  # optional: the LM a variant belongs to
     "baseline": false,                # optional: the row deltas are measured against
     "dataset": "audiocaps"}           # retrieval rows: the evaluation dataset

Several files for one section are concatenated. An LR-search input is an Optuna result
JSON ``{"name", "metric", "direction", "trials": [{"params": {"lr": ..}, "value": ..}],
"best_params": {...}}`` or ``{"name", "png": "path"}`` for a figure made elsewhere.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.utils.io import read_json


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    # Nested metric objects ({"t2a": {"R@1": ..}}) become "t2a/R@1" keys.
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        out.update(_flatten(value, name) if isinstance(value, Mapping) else {name: value})
    return out


def _check_metrics(metrics: Any, where: str, key: str = "metrics") -> dict[str, float]:
    if not isinstance(metrics, Mapping):
        raise ValueError(f"{where}: {key!r} must be an object of numbers, found {type(metrics).__name__}")
    metrics = _flatten(metrics)
    for name, value in metrics.items():
        if value is not None and not _number(value):
            raise ValueError(f"{where}: {key}[{name!r}] must be a finite number or null, found {value!r}")
    return {str(k): (None if v is None else float(v)) for k, v in metrics.items()}


def _seed_stats(seeds: Any, where: str) -> tuple[dict[str, float], dict[str, float], int]:
    if not isinstance(seeds, list) or not seeds:
        raise ValueError(f"{where}: 'seeds' must be a non-empty list of metric objects")
    per_seed = [_check_metrics(s, f"{where}: seeds[{i}]", "seed") for i, s in enumerate(seeds)]
    names = list(dict.fromkeys(k for s in per_seed for k in s))  # first-appearance order
    mean, std = {}, {}
    for name in names:
        vals = np.array([s[name] for s in per_seed if s.get(name) is not None], dtype=float)
        mean[name] = float(vals.mean())
        # Sample std (ddof=1): the run-to-run noise floor; 0 for a single seed.
        std[name] = float(vals.std(ddof=1)) if vals.size > 1 else 0.0
    return mean, std, len(per_seed)


def validate_row(row: Any, where: str) -> dict[str, Any]:
    """Check one row and derive ``metrics``/``std``/``n_seeds`` from ``seeds`` when given.

    Raises:
        ValueError: naming ``where`` and the problem.
    """
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}: expected an object, found {type(row).__name__}")
    if not isinstance(row.get("name"), str) or not row["name"].strip():
        raise ValueError(f"{where}: 'name' must be a non-empty string, found {row.get('name')!r}")
    out = dict(row)
    if "seeds" in row:
        mean, std, n = _seed_stats(row["seeds"], where)
        out["metrics"] = {**mean, **_check_metrics(row.get("metrics", {}), where)}
        out["std"] = {**std, **_check_metrics(row.get("std", {}), where, "std")}
        out["n_seeds"] = n
    elif "metrics" not in row:
        raise ValueError(f"{where}: row {row['name']!r} needs 'metrics' (or 'seeds')")
    else:
        out["metrics"] = _check_metrics(row["metrics"], where)
        out["std"] = _check_metrics(row.get("std") or {}, where, "std")
    for flag in ("leaky", "baseline"):
        if flag in row and not isinstance(row[flag], bool):
            raise ValueError(f"{where}: {flag!r} must be true or false, found {row[flag]!r}")
    return out


def load_table_input(paths: str | Path | Sequence[str | Path]) -> dict[str, Any]:
    """Load and validate one or more table-input files for a section.

    Returns:
        ``{"rows": [...], "metrics": [...] | None, "lower_is_better": [...], "title", "primary",
        "sources": [paths]}`` (options taken from the first file that sets them).

    Raises:
        FileNotFoundError: when a file is missing.
        ValueError: naming the file and row on a schema error.
    """
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    merged: dict[str, Any] = {"rows": [], "metrics": None, "lower_is_better": [], "title": None,
                              "primary": None, "sources": [str(p) for p in paths]}
    for path in paths:
        data = read_json(path)
        if isinstance(data, list):
            data = {"rows": data}
        if not isinstance(data, Mapping) or not isinstance(data.get("rows"), list):
            raise ValueError(f"{path}: expected a list of rows or an object with a 'rows' list")
        merged["rows"] += [validate_row(r, f"{path}: rows[{i}]") for i, r in enumerate(data["rows"])]
        for key in ("metrics", "title", "primary"):
            if merged[key] is None and data.get(key) is not None:
                merged[key] = data[key]
        merged["lower_is_better"] += list(data.get("lower_is_better", []))
    return merged


def load_lr_search(paths: str | Path | Sequence[str | Path]) -> list[dict[str, Any]]:
    """Load LR-search inputs (Optuna result JSONs, or ``{"name", "png"}`` pointers).

    Returns:
        One dict per study with ``name`` and either ``trials`` or ``png`` (an absolute path).

    Raises:
        FileNotFoundError: when a file (or a referenced PNG) is missing.
        ValueError: on a schema error, naming the file.
    """
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    studies = []
    for path in paths:
        data = read_json(path)
        items = data if isinstance(data, list) else [data]
        for i, study in enumerate(items):
            where = f"{path}: study {i}"
            if not isinstance(study, Mapping) or not isinstance(study.get("name"), str):
                raise ValueError(f"{where}: expected an object with a 'name'")
            if "png" in study:
                png = Path(study["png"])
                png = png if png.is_absolute() else Path(os.path.normpath(Path(path).parent / png))
                if not png.is_file():
                    raise FileNotFoundError(f"{where}: figure {png} not found")
                studies.append({"name": study["name"], "png": str(png)})
                continue
            trials = study.get("trials")
            if not isinstance(trials, list) or not trials:
                raise ValueError(f"{where}: needs a non-empty 'trials' list or a 'png'")
            for j, t in enumerate(trials):
                if not isinstance(t, Mapping) or not isinstance(t.get("params"), Mapping) or not (
                        t.get("value") is None or _number(t.get("value"))):
                    raise ValueError(f"{where}: trials[{j}] must be {{'params': {{...}}, 'value': number}}")
            studies.append(dict(study))
    return studies
