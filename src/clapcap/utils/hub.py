"""Resolve a Hugging Face model, named by a hub id and a revision or by a local folder, to local
files, and record what identifies it by content.

This is the mechanism that CLAP checkpoints (:func:`clapcap.encoders.checkpoints.resolve_hf_checkpoint`)
and a captioner's pretrained LM (:func:`clapcap.captioning.decoders.resolve_lm`) share; each
passes its own check of what the folder must hold.

- a hub id (``gpt2``, ``laion/clap-htsat-unfused``) with an optional ``revision`` (branch, tag or
  commit) resolves to one snapshot of the local hub cache: downloaded when online, read from the
  cache only with ``HF_HUB_OFFLINE=1``; the record is the snapshot's commit;
- a local ``save_pretrained`` folder: the record is the SHA-256 of its weights.

Every mistake is one :class:`~clapcap.errors.InputError` naming the model and what to do (the
``hf download`` command that caches a missing snapshot), raised before any model code loads.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clapcap.errors import ClapcapError, InputError
from clapcap.utils.io import sha256_file

# ``org/name`` or ``name`` as the hub spells repository ids (huggingface_hub's validator is stricter still).
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$|^[A-Za-z0-9][\w.-]*$")
# A name ending so is a file, never a hub id.
FILE_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".safetensors")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")
# What snapshot_download fetches: configs, tokenizer files and safetensors weights; the
# pytorch_model.bin only where a repository has no safetensors (laion/clap-htsat-unfused's main
# has only the .bin), so a repository with both is not downloaded twice over.
_HUB_PATTERNS = ["*.json", "*.txt", "*.model", "*.safetensors"]
_BIN_PATTERNS = ["*.json", "*.txt", "*.model", "*.bin"]

FolderCheck = Callable[[Path, str], None]
"""``check(folder, source)``: raises InputError unless ``folder`` holds what the caller loads."""


@dataclass(frozen=True)
class ResolvedCheckpoint:
    """A checkpoint resolved to local files, and what identifies it by content."""

    source: str
    path: Path
    kind: Literal["hub", "folder", "file"]
    revision: str | None = None
    sha256: str | None = None

    def record(self) -> dict[str, Any]:
        """``checkpoint``, ``checkpoint_kind`` and ``checkpoint_revision`` (hub commit) or
        ``checkpoint_sha256`` (file or folder weights): no machine path."""
        out: dict[str, Any] = {"checkpoint": self.source, "checkpoint_kind": self.kind}
        if self.revision is not None:
            out["checkpoint_revision"] = self.revision
        if self.sha256 is not None:
            out["checkpoint_sha256"] = self.sha256
        return out


def looks_like_path(name: str) -> bool:
    """True when ``name`` can only be a local path: not a hub id, or a relative path whose first
    folder exists here (``models/synth_clapp`` is a mistyped folder, not an organisation)."""
    if name.startswith((".", "/", "~")) or "\\" in name or not _HUB_ID.match(name):
        return True
    if name.endswith(FILE_SUFFIXES):
        return True
    return "/" in name and Path(name.split("/", 1)[0]).is_dir()


def weights_sha256(folder: Path) -> str:
    """SHA-256 of a folder's weights: the file's own for one file, else of the sorted
    ``name:sha256`` lines of every weight shard."""
    files = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    if len(files) == 1:
        return sha256_file(files[0])
    lines = "".join(f"{p.name}:{sha256_file(p)}\n" for p in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def check_weights(folder: Path, source: str) -> None:
    """Raise InputError unless ``folder`` has ``config.json`` and weights."""
    if not (folder / "config.json").is_file():
        raise InputError(f"{source}: not a save_pretrained folder (no config.json)")
    if not any((folder / f).is_file() for f in WEIGHT_FILES):
        raise InputError(f"{source}: no weights ({' or '.join(WEIGHT_FILES[:2])})")


def resolve_model(name: str, *, check: FolderCheck, revision: str = "", cache_dir: str | Path | None = None,
                  hash_folder: bool = True) -> ResolvedCheckpoint:
    """Resolve ``name`` (a ``save_pretrained`` folder or a hub id) to local files, checked by ``check``.

    Args:
        revision: hub branch, tag or commit (hub ids only); empty = ``main``.
        cache_dir: the hub cache (default: huggingface_hub's, ``HF_HUB_CACHE``).
        hash_folder: record a folder by the SHA-256 of its weights (False: no record of its content,
            for a caller that only loads it).

    Returns:
        The resolved model; a hub id's ``revision`` is its snapshot's commit.

    Raises:
        InputError: a file, a missing folder, a folder ``check`` refuses, an id or revision that
            does not exist, or an id not cached while ``HF_HUB_OFFLINE`` is set.
        ClapcapError: when the hub cannot be reached online.
    """
    path = Path(name).expanduser()
    if path.is_file():
        raise InputError(f"{name}: a file; expected a save_pretrained folder or a hub id")
    if path.is_dir():
        if revision:
            raise InputError(f"{name}: a local folder has no revision (revision {revision!r} given)")
        check(path, name)
        return ResolvedCheckpoint(name, path, "folder", sha256=weights_sha256(path) if hash_folder else None)
    if looks_like_path(name):
        parent = path.parent if str(path.parent) not in ("", ".") else Path(".")
        near = sorted(p.name for p in parent.iterdir() if p.is_dir())[:8] if parent.is_dir() else []
        hint = f" ({parent}/ holds: {', '.join(near)})" if near else ""
        raise InputError(f"{name}: no such folder{hint}; a hub id is written org/name")
    snapshot = hub_snapshot(name, revision, cache_dir)
    check(snapshot, f"{name} (snapshot {snapshot.name})")
    return ResolvedCheckpoint(name, snapshot, "hub", revision=snapshot.name)


def hub_snapshot(repo_id: str, revision: str = "", cache_dir: str | Path | None = None) -> Path:
    """The local snapshot folder of ``repo_id`` at ``revision`` (downloaded when online).

    Raises:
        InputError: no such repository or revision, or not cached while ``HF_HUB_OFFLINE`` is set.
        ClapcapError: when the hub cannot be reached, or answers with another error.
    """
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    at = f"{repo_id}@{revision}" if revision else repo_id
    offline = bool(constants.HF_HUB_OFFLINE)
    try:
        for patterns in (_HUB_PATTERNS, _BIN_PATTERNS):
            snap = Path(huggingface_hub.snapshot_download(repo_id, revision=revision or None, cache_dir=cache_dir,
                                                          local_files_only=offline, allow_patterns=patterns))
            if any((snap / f).is_file() for f in WEIGHT_FILES):
                break
        return snap
    except RevisionNotFoundError as err:
        raise InputError(f"{at}: no such revision on the hub") from err
    except RepositoryNotFoundError as err:
        raise InputError(f"{repo_id}: no such model on the hub (a private or gated one needs `hf auth login`)") \
            from err
    except LocalEntryNotFoundError as err:
        if not offline:
            raise ClapcapError(f"{at}: the hub could not be reached and the model is not cached") from err
        cache = Path(cache_dir or constants.HF_HUB_CACHE)
        raise InputError(f"{at}: {cached_note(cache, repo_id)} and HF_HUB_OFFLINE=1; cache it on a machine "
                         f"with internet (`hf download {repo_id}" + (f" --revision {revision}" if revision else "")
                         + "`) and copy the cache, or unset HF_HUB_OFFLINE (`make repro HF_HUB_OFFLINE=0`)") from err
    except HfHubHTTPError as err:
        raise ClapcapError(f"{at}: the hub answered {err.__class__.__name__}: {str(err).splitlines()[0]}") from err


def cached_note(cache: Path, repo_id: str) -> str:
    """What the cache holds of ``repo_id``, for an offline miss."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    refs = sorted(p.name for p in (repo / "refs").glob("*")) if (repo / "refs").is_dir() else []
    snaps = sorted(p.name[:12] for p in (repo / "snapshots").glob("*")) if (repo / "snapshots").is_dir() else []
    if not refs and not snaps:
        return f"not in the Hugging Face cache ({cache.name}/ under HF_HOME)"
    return f"this revision is not in the Hugging Face cache (cached: refs {refs or 'none'}, snapshots {snaps})"
