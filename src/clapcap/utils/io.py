"""Atomic, resumable file writes, small JSON helpers and content hashes.

Every result file is written to a temporary name in the same folder and renamed into
place, so a crash never leaves a half-written result that a rerun would mistake for
finished work. Cache keys are content hashes (:func:`sha256_json`, :func:`sha256_file`):
never an absolute path or an mtime, so two clones in different folders agree.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success.

    The temporary file keeps ``path``'s suffix so that writers which infer the format
    from the suffix (numpy, pandas, torch) still work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates 0600 files; give results the usual permissions (0666 minus umask).
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; on success, give it the usual
    permissions and rename it onto ``path`` (replacing a folder there), so a crash never
    leaves a half-written folder that looks finished. The temporary folder is removed on error.
    """
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        umask = os.umask(0)  # mkdtemp makes 0700: files 0666 and folders 0777, minus umask
        os.umask(umask)
        for sub in [tmp, *tmp.rglob("*")]:
            sub.chmod((0o777 if sub.is_dir() else 0o666) & ~umask)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")


def home_relative(path: str | Path) -> str:
    """``path`` with the user's home folder written ``~`` (as a shell reads it), so a message that
    names a cache file says the same on every machine and in every committed output."""
    text, home = str(path), str(Path.home())
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home):]
    return text


def record_matches(folder: str | Path, record: dict[str, Any], *, name: str = "clapcap_source.json") -> bool:
    """Whether ``folder`` holds the JSON file ``name`` equal to ``record``: a converted folder's
    note of what it was built from, checked before reusing it."""
    marker = Path(folder) / name
    return marker.is_file() and read_json(marker) == record


def write_json(path: str | Path, data: Any, *, indent: int = 2) -> Path:
    """Atomically write ``data`` as strict JSON (numpy scalars and paths allowed). Returns the path.

    JSON has no NaN or Infinity (Python's ``json`` would write them, and strict readers
    such as ``jq`` or a browser then refuse the file): write ``None`` and say why instead.

    Raises:
        ValueError: naming ``path`` and the key path (``$.similarity.pearson``) of the first
            NaN or infinite number in ``data``; nothing is written.
    """
    try:
        text = json.dumps(data, indent=indent, default=_json_default, sort_keys=False, allow_nan=False)
    except ValueError as err:
        found = _non_finite(data, "$")
        if found is None:
            raise
        raise ValueError(f"{path}: {found[0]} is {found[1]}, which JSON cannot hold; "
                         "write null (and the reason) instead") from err
    with atomic_path(path) as tmp:
        tmp.write_text(text + "\n")
    return Path(path)


def _non_finite(obj: Any, where: str) -> tuple[str, float] | None:
    """``(key path, value)`` of the first NaN or infinite number in ``obj``, or None."""
    if isinstance(obj, (float, np.floating)):
        return None if math.isfinite(obj) else (where, float(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind != "f":
            return None
        bad = np.argwhere(~np.isfinite(obj))
        if not bad.size:
            return None
        return f"{where}{''.join(f'[{i}]' for i in bad[0])}", float(obj[tuple(bad[0])])
    if isinstance(obj, dict):
        items = ((f"{where}.{k}", v) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(obj))
    else:
        return None
    return next((f for f in (_non_finite(v, k) for k, v in items) if f is not None), None)


def read_json(path: str | Path) -> Any:
    """Read a JSON file.

    Raises:
        FileNotFoundError: naming the path when it does not exist.
        ValueError: naming the path, line and column when it is not valid JSON.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from err


def write_bytes_atomic(path: str | Path, writer: Callable[[BinaryIO], None]) -> Path:
    """Atomically write a binary file through ``writer(fileobj)``. Returns the path."""
    with atomic_path(path) as tmp, tmp.open("wb") as fh:
        writer(fh)
    return Path(path)


def sha256_json(data: Any) -> str:
    """Hex SHA-256 of ``data`` as canonical JSON (sorted keys, no whitespace; numpy and paths allowed)."""
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of the bytes of ``path``.

    Raises:
        FileNotFoundError: naming the path when it does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found")
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def sha256_tree(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, or of a folder's files (relative POSIX names and bytes,
    in sorted order). Names inside the folder count, where it lies and mtimes do not; a
    missing path hashes as ``"missing"`` so that a later appearance changes the digest.
    """
    path = Path(path)
    if path.is_file():
        return sha256_file(path)
    if not path.is_dir():
        return "missing"
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return sha256_json([[p.relative_to(path).as_posix(), sha256_file(p)] for p in files])


def remove_stale_temps(path: str | Path) -> int:
    """Delete the temporary files that :func:`atomic_path` left beside ``path`` when its
    process was killed before the rename (SIGKILL skips ``finally``). Call it only where a
    single process writes ``path``.

    Returns:
        The number of files removed.
    """
    import glob

    path = Path(path)
    if not path.parent.is_dir():
        return 0
    stale = list(path.parent.glob(f".{glob.escape(path.name)}.*.tmp{glob.escape(path.suffix)}"))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return len(stale)


def prepared_dataset_hash(dataset_dir: str | Path) -> str:
    """The content hash behind :func:`clapcap.data.prepare.dataset_fingerprint` (here, below
    every layer, so that tracking can tag runs with it): SHA-256 of ``manifest.csv``'s bytes
    and ``dataset.json`` without its ``root``.

    Raises:
        FileNotFoundError: naming ``manifest.csv`` or ``dataset.json`` when missing.
    """
    dataset_dir = Path(dataset_dir)
    info = {k: v for k, v in read_json(dataset_dir / "dataset.json").items() if k != "root"}
    return sha256_json([sha256_file(dataset_dir / "manifest.csv"), info])
