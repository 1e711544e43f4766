"""A content listing of a real dataset's files, so that DVC sees every change to them.

A real dataset lives outside the repository, so DVC cannot track it as an ordinary
dependency. The ``data_listing`` stage (``always_changed``) writes ``data/listing.json``:
the path (relative to ``data.external.root``), size and SHA-256 of every metadata CSV
named in ``data.external.csv`` and of every audio file under ``root/audio_dir`` (the whole
``root`` for the folder source; symlinked folders are followed), sorted by path. There is no absolute path and no mtime in
it, so it changes exactly when the content does; ``prepare_data`` depends on it, and DVC
reruns it (and what depends on it) after a caption is edited or an audio file is replaced,
added or removed. The synthetic source lists no files, so its listing never changes.
Audio that an installed package ships (``include_real_audio``) is versioned by that
package and is not listed.

Hashing reads every file on each run. An optional memo (``DEFAULT_MEMO``, git-ignored, never
a DVC output) maps a file's identity on this machine (device, inode, size, mtime and ctime
in ns) to its hash, so unchanged files are only stat'ed. The memo never enters the listing;
deleting it only costs one full re-hash.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from clapcap.data.audio import SUPPORTED_SUFFIXES
from clapcap.data.config import DataParams
from clapcap.utils.io import read_json, sha256_file, sha256_json, write_json

logger = logging.getLogger(__name__)

DEFAULT_MEMO = Path(".cache/clapcap/listing_memo.json")
MAX_MEMO_ENTRIES = 500_000


class _HashMemo:
    """SHA-256 of files, remembered by their identity on this machine (see module docstring)."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        self.entries: dict[str, str] = {}
        self.used: dict[str, str] = {}
        self.hashed = 0
        if self.path is not None and self.path.is_file():
            try:
                data = read_json(self.path)
                self.entries = {str(k): str(v) for k, v in data.get("entries", {}).items()}
            except (ValueError, AttributeError) as err:
                logger.warning("%s: unreadable hash memo, starting afresh (%s)", self.path, err)

    def digest(self, path: Path) -> tuple[int, str]:
        """``(size, sha256)`` of ``path``, from the memo when its identity is unchanged."""
        st = path.stat()
        key = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
        digest = self.entries.get(key)
        if digest is None:
            digest = sha256_file(path)
            self.hashed += 1
        self.used[key] = digest
        return st.st_size, digest

    def save(self) -> None:
        if self.path is None:
            return
        entries = {**self.entries, **self.used}
        if len(entries) > MAX_MEMO_ENTRIES:  # forget files not seen in this run
            entries = self.used
        write_json(self.path, {"version": 1, "entries": entries}, indent=0)


def _audio_files(base: Path) -> list[Path]:
    """Audio files under ``base``, following symlinked folders (prepare reads through them,
    so their files must be listed) but not into a folder that is its own ancestor."""
    if not base.is_dir():
        return []
    found = []
    ancestors: dict[str, frozenset[str]] = {}  # dirpath -> real paths of it and its parents
    for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
        real = os.path.realpath(dirpath)
        above = ancestors.get(os.path.dirname(dirpath), frozenset())
        if real in above:  # a symlink loop: listed once, on the way down
            dirnames[:] = []
            continue
        ancestors[dirpath] = above | {real}
        dirnames.sort()
        found += [Path(dirpath) / n for n in filenames if Path(n).suffix.lower() in SUPPORTED_SUFFIXES]
    return found


def build_listing(params: DataParams, *, memo_path: str | Path | None = None) -> dict[str, Any]:
    """The content listing of ``params``'s input files.

    Returns:
        ``{"source": str, "files": [{"path", "size", "sha256"}, ...]}``, files sorted by
        path (relative to ``data.external.root``, POSIX separators); no files for the
        synthetic source.

    Raises:
        ValueError: when a real source lacks ``external.root`` or ``external.csv``.
        FileNotFoundError: naming the root or a metadata CSV that does not exist.
    """
    listing: dict[str, Any] = {"source": params.source, "files": []}
    if params.source == "synthetic":
        return listing
    ext = params.external
    if not ext.root or not ext.csv:
        raise ValueError(f"data.source={params.source} needs data.external.root and data.external.csv")
    root = Path(ext.root).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: data.external.root is not a folder")
    files: dict[str, Path] = {}
    for csv in sorted(set(ext.csv.values())):
        if not (root / csv).is_file():
            raise FileNotFoundError(f"{root / csv}: metadata file not found (data.external.csv)")
        files[Path(csv).as_posix()] = root / csv
    audio_base = root if params.source == "folder" or not ext.audio_dir else root / ext.audio_dir
    for path in _audio_files(audio_base):
        files.setdefault(path.relative_to(root).as_posix(), path)
    memo = _HashMemo(memo_path)
    for rel in sorted(files):
        size, digest = memo.digest(files[rel])
        listing["files"].append({"path": rel, "size": size, "sha256": digest})
    memo.save()
    logger.info("listing of %s: %d files (%d hashed, %d from the memo)", root, len(files), memo.hashed,
                len(files) - memo.hashed)
    return listing


def listing_digest(listing: dict[str, Any]) -> str:
    """SHA-256 of a listing's canonical JSON (what ``dataset.json`` records)."""
    return sha256_json(listing)


def write_listing(params: DataParams, out_path: str | Path, *, memo_path: str | Path | None = None) -> Path:
    """Stage ``data_listing``: write :func:`build_listing` to ``out_path`` (atomically).

    Returns:
        ``out_path``.

    Raises:
        ValueError / FileNotFoundError: as :func:`build_listing`.
    """
    listing = build_listing(params, memo_path=memo_path)
    write_json(out_path, listing, indent=1)
    return Path(out_path)


def listing_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The files that differ between two listings, sorted, each as ``"<path> (changed)"``,
    ``"<path> (removed)"`` or ``"<path> (added)"``."""
    old = {f["path"]: (f["size"], f["sha256"]) for f in before.get("files", [])}
    new = {f["path"]: (f["size"], f["sha256"]) for f in after.get("files", [])}
    return [f"{path} ({'removed' if path not in new else 'added' if path not in old else 'changed'})"
            for path in sorted(old.keys() | new.keys()) if old.get(path) != new.get(path)]
