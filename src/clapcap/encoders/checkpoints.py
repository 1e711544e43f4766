"""Resolve and check a CLAP checkpoint before any model code runs.

A user names a checkpoint three ways (docs/encoders.md, "Your checkpoint"):

- a Hugging Face hub id (``laion/clap-htsat-unfused``), optionally with a ``revision``
  (branch, tag or commit): :func:`resolve_hf_checkpoint` resolves it to one snapshot of the
  local hub cache (downloading it when online, reading the cache only with
  ``HF_HUB_OFFLINE=1``) and records the snapshot's commit;
- a folder written by ``save_pretrained`` (model, tokenizer and ``preprocessor_config.json``):
  recorded by the SHA-256 of its weights;
- a laion_clap ``.pt`` (:func:`read_laion_checkpoint`): recorded by its SHA-256, its fusion
  flag read from the state dict.

Every mistake here is one :class:`~clapcap.errors.InputError` naming the checkpoint and what
to do, raised before transformers or laion_clap load anything (so never a hub retry loop, a
traceback, or random weights in place of a mistyped path). :meth:`ResolvedCheckpoint.record`
is what a dump's meta, an MLflow run and a model card keep, so two results from two revisions
of one hub repository can be told apart.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clapcap.errors import ClapcapError, InputError
from clapcap.utils.io import sha256_file

# ``org/name`` as the hub spells repository ids (huggingface_hub's validator is stricter still).
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$|^[A-Za-z0-9][\w.-]*$")
LAION_SUFFIXES = (".pt", ".pth", ".ckpt")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer_config.json")
PROCESSOR_FILE = "preprocessor_config.json"
# What snapshot_download fetches: configs, tokenizer files and safetensors weights; the
# pytorch_model.bin only where a repository has no safetensors (laion/clap-htsat-unfused's main
# has only the .bin), so a repository with both is not downloaded twice over.
_HUB_PATTERNS = ["*.json", "*.txt", "*.model", "*.safetensors"]
_BIN_PATTERNS = ["*.json", "*.txt", "*.model", "*.bin"]
# laion_clap's HTSAT has these modules only when built with enable_fusion=True.
FUSION_KEYS = ("audio_branch.fusion_model.", "audio_branch.mel_conv2d.")
# roberta-base's id of "\u0120the" (" the"). clapcap's offline stand-in (encoders.hf_cache) has GPT-2's
# ids shifted by 4, so a real checkpoint's text tower would read the wrong tokens under it.
ROBERTA_THE = 5
# Set by clapcap.encoders.laion.save_laion_checkpoint under clapcap's offline stand-in tokenizer.
STAND_IN_MARK = "clapcap_tokenizer"


def is_stand_in(tokenizer: Any) -> bool:
    """True for a byte-level BPE tokenizer whose " the" is not roberta-base's id: clapcap's stand-in."""
    the = tokenizer.get_vocab().get("\u0120the") if hasattr(tokenizer, "get_vocab") else None
    return the is not None and the != ROBERTA_THE


def tokenizer_label(tokenizer: Any) -> str:
    """What a dump's meta says of the tokenizer: its class, and whose ids a RoBERTa-style one has."""
    name = type(tokenizer).__name__
    if not hasattr(tokenizer, "get_vocab") or tokenizer.get_vocab().get("\u0120the") is None:
        return name
    return f"{name} (clapcap offline stand-in: GPT-2 ids + 4)" if is_stand_in(tokenizer) else \
        f"{name} (roberta-base ids)"


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
    folder exists here (``models/default_clapp`` is a mistyped folder, not an organisation)."""
    if name.startswith((".", "/", "~")) or "\\" in name or not _HUB_ID.match(name):
        return True
    if name.endswith((*LAION_SUFFIXES, ".bin", ".safetensors")):
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


def check_pretrained_folder(folder: Path, source: str) -> None:
    """Raise InputError unless ``folder`` holds a model, its tokenizer and its feature extractor."""
    if not (folder / "config.json").is_file():
        raise InputError(f"{source}: not a save_pretrained folder (no config.json)")
    if not any((folder / f).is_file() for f in WEIGHT_FILES):
        raise InputError(f"{source}: no weights ({' or '.join(WEIGHT_FILES[:2])})")
    missing = [] if any((folder / f).is_file() for f in TOKENIZER_FILES) else ["the tokenizer"]
    if not (folder / PROCESSOR_FILE).is_file():
        missing.append(PROCESSOR_FILE)
    if missing:
        raise InputError(
            f"{source}: the folder has the model but not {' or '.join(missing)}: `model.save_pretrained()` "
            f"writes only config.json and the weights; add them with `ClapProcessor.from_pretrained("
            f"\"<the checkpoint it started from, e.g. laion/clap-htsat-unfused>\").save_pretrained(\"{source}\")`")


def resolve_hf_checkpoint(checkpoint: str, *, revision: str = "", cache_dir: str | Path | None = None,
                          ) -> ResolvedCheckpoint:
    """Resolve an ``hf_clap`` checkpoint (a ``save_pretrained`` folder or a hub id) to local files.

    Args:
        revision: hub branch, tag or commit (hub ids only); empty = ``main``.
        cache_dir: the hub cache (default: huggingface_hub's, ``HF_HUB_CACHE``).

    Returns:
        The resolved checkpoint; a hub id's ``revision`` is its snapshot's commit.

    Raises:
        InputError: a laion_clap file, a missing or incomplete folder, an id or revision that
            does not exist, or an id not cached while ``HF_HUB_OFFLINE`` is set.
        ClapcapError: when the hub cannot be reached online.
    """
    path = Path(checkpoint).expanduser()
    if path.is_file():
        if path.suffix in LAION_SUFFIXES:
            raise InputError(f"{checkpoint}: a laion_clap checkpoint file; use --backend laion_clap "
                             "(backend: laion_clap; with enable_fusion for a fused one)")
        raise InputError(f"{checkpoint}: a file; the hf_clap backend takes a save_pretrained folder or a hub id")
    if path.is_dir():
        if revision:
            raise InputError(f"{checkpoint}: a local folder has no revision (revision {revision!r} given)")
        check_pretrained_folder(path, checkpoint)
        return ResolvedCheckpoint(checkpoint, path, "folder", sha256=weights_sha256(path))
    if path.suffix in LAION_SUFFIXES:
        raise InputError(f"{checkpoint}: no such file (and a {path.suffix} file is a laion_clap checkpoint: "
                         "--backend laion_clap)")
    if looks_like_path(checkpoint):
        parent = path.parent if str(path.parent) not in ("", ".") else Path(".")
        near = sorted(p.name for p in parent.iterdir() if p.is_dir())[:8] if parent.is_dir() else []
        hint = f" ({parent}/ holds: {', '.join(near)})" if near else ""
        raise InputError(f"{checkpoint}: no such folder{hint}; a hub id is written org/name")
    snapshot = _snapshot(checkpoint, revision, cache_dir)
    check_pretrained_folder(snapshot, f"{checkpoint} (snapshot {snapshot.name})")
    return ResolvedCheckpoint(checkpoint, snapshot, "hub", revision=snapshot.name)


def _snapshot(repo_id: str, revision: str, cache_dir: str | Path | None) -> Path:
    """The local snapshot folder of ``repo_id`` at ``revision`` (downloaded when online)."""
    from huggingface_hub import constants, snapshot_download
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
            snap = Path(snapshot_download(repo_id, revision=revision or None, cache_dir=cache_dir,
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
            raise ClapcapError(f"{at}: the hub could not be reached and the checkpoint is not cached") from err
        cache = Path(cache_dir or constants.HF_HUB_CACHE)
        raise InputError(f"{at}: {_cached_note(cache, repo_id)} and HF_HUB_OFFLINE=1; cache it on a machine "
                         f"with internet (`hf download {repo_id}" + (f" --revision {revision}" if revision else "")
                         + "`) and copy the cache, or unset HF_HUB_OFFLINE (`make repro HF_HUB_OFFLINE=0`)") from err
    except HfHubHTTPError as err:
        raise ClapcapError(f"{at}: the hub answered {err.__class__.__name__}: {str(err).splitlines()[0]}") from err


def _cached_note(cache: Path, repo_id: str) -> str:
    """What the cache holds of ``repo_id``, for an offline miss."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    refs = sorted(p.name for p in (repo / "refs").glob("*")) if (repo / "refs").is_dir() else []
    snaps = sorted(p.name[:12] for p in (repo / "snapshots").glob("*")) if (repo / "snapshots").is_dir() else []
    if not refs and not snaps:
        return f"not in the Hugging Face cache ({cache.name}/ under HF_HOME)"
    return f"this revision is not in the Hugging Face cache (cached: refs {refs or 'none'}, snapshots {snaps})"


def read_laion_checkpoint(checkpoint: str, *, enable_fusion: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a laion_clap ``.pt`` and check it before laion_clap is imported.

    Returns:
        ``(state_dict, info)``: the state dict as ``CLAP.load_state_dict`` takes it (no
        ``module.`` prefix, no ``text_branch.embeddings.position_ids``, which current
        transformers neither saves nor loads), and ``info`` with ``sha256``, ``fused`` and
        ``stand_in_tokenizer`` (True for checkpoints clapcap wrote under its offline stand-in).

    Raises:
        InputError: no such file; not a torch file; not a laion_clap state dict; a fused
            checkpoint loaded as unfused or the reverse (the state dict tells).
    """
    import pickle

    import torch

    path = Path(checkpoint).expanduser()
    if not path.is_file():
        what = "a folder; a laion_clap checkpoint is one .pt file" if path.is_dir() else "no such file"
        raise InputError(f"{checkpoint}: {what}")
    try:
        # laion_clap's own loader reads these files with weights_only=False (they hold the
        # training's optimizer and args); a checkpoint is code the user chose to trust.
        raw = torch.load(path, map_location="cpu", weights_only=False)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, AttributeError) as err:
        raise InputError(f"{checkpoint}: not a torch checkpoint ({err.__class__.__name__}: "
                         f"{str(err).splitlines()[0] if str(err) else 'unreadable'})") from err
    sd = raw.get("state_dict", raw) if isinstance(raw, dict) else None
    if not isinstance(sd, dict) or not sd:
        raise InputError(f"{checkpoint}: not a laion_clap checkpoint (no state dict)")
    sd = {(k[7:] if k.startswith("module.") else k): v for k, v in sd.items()}
    if not any(k.startswith("audio_branch.") for k in sd) or not any(k.startswith("text_branch.") for k in sd):
        raise InputError(f"{checkpoint}: not a laion_clap checkpoint (no audio_branch.* and text_branch.* "
                         f"weights; first keys: {list(sd)[:3]})")
    sd.pop("text_branch.embeddings.position_ids", None)
    fused = any(k.startswith(FUSION_KEYS) for k in sd)
    if fused != enable_fusion:
        have = "a fused checkpoint (it has audio_branch.fusion_model weights)" if fused else \
            "an unfused checkpoint (it has no audio_branch.fusion_model weights)"
        flag = "--enable-fusion (enable_fusion: true)" if fused else "no --enable-fusion (enable_fusion: false)"
        raise InputError(f"{checkpoint}: {have}, loaded with enable_fusion={enable_fusion}; use {flag}")
    info = {"sha256": sha256_file(path), "fused": fused,
            "stand_in_tokenizer": isinstance(raw, dict) and raw.get(STAND_IN_MARK) == "stand-in"}
    return sd, info


def checkpoint_record(cfg: Any) -> dict[str, Any]:
    """What identifies an encoder's weights by content, without loading them.

    ``hf_clap`` with a checkpoint: :func:`resolve_hf_checkpoint`'s record (hub commit, or the
    folder's weights SHA-256); ``laion_clap``: the file's SHA-256; an empty checkpoint: the
    random model's seed; other backends: their config (their weights are not resolved here).

    Raises:
        InputError: as :func:`resolve_hf_checkpoint`, or a laion_clap path that is not a file.
    """
    base = {"encoder": cfg.name, "backend": cfg.backend}
    if not cfg.checkpoint:
        return {**base, "checkpoint_kind": "random", "tiny_seed": cfg.tiny_seed}
    if cfg.backend == "hf_clap":
        return {**base, **resolve_hf_checkpoint(cfg.checkpoint, revision=cfg.revision).record()}
    if cfg.backend == "laion_clap":
        path = Path(cfg.checkpoint).expanduser()
        if not path.is_file():
            raise InputError(f"{cfg.checkpoint}: no such file (embed.encoders.{cfg.name}.checkpoint)")
        return {**base, "checkpoint": cfg.checkpoint, "checkpoint_kind": "file",
                "checkpoint_sha256": sha256_file(path), "enable_fusion": cfg.enable_fusion}
    return {**base, "checkpoint": cfg.checkpoint, "checkpoint_kind": "not resolved"}


def write_checkpoint_records(encoders: dict[str, Any], names: list[str], out_dir: str | Path) -> dict[str, Any]:
    """Write ``<out_dir>/<name>.json`` (:func:`checkpoint_record`) for each of ``names``, and
    remove the records of encoders no longer listed.

    The DVC stage ``resolve_checkpoints`` runs this on every ``dvc repro`` (``always_changed``),
    and each ``embed`` item depends on its encoder's file: a hub repository that moves to a new
    commit changes the file and reruns that encoder's dumps and what reads them; the same commit
    rewrites the same bytes and reruns nothing.

    Returns:
        ``{name: record}``.

    Raises:
        InputError: on a name that is not a key of ``encoders``, or a checkpoint that does not resolve.
    """
    from clapcap.utils.io import write_json

    stray = [n for n in names if n not in encoders]
    if stray:
        raise InputError(f"embed.build: {stray} not in embed.encoders {sorted(encoders)}")
    out = Path(out_dir)
    records = {n: checkpoint_record(encoders[n]) for n in names}  # all resolve before any is written
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        if old.stem not in records:
            old.unlink()
    for name, record in records.items():
        write_json(out / f"{name}.json", record)
    return records


def resolve_base_clap(base_model: str, *, section: str, revision: str = "") -> ResolvedCheckpoint:
    """The base CLAP of a fine-tune (``robust_train.base_model`` and the like): a ``ClapModel``
    folder (the project's own ``models/default_clap/model``) or a published hub id.

    Raises:
        FileNotFoundError: a folder that does not exist (names the stage that builds the default).
        InputError: as :func:`resolve_hf_checkpoint`.
    """
    if looks_like_path(base_model) and not Path(base_model).expanduser().exists():
        raise FileNotFoundError(f"{base_model}: base CLAP folder not found (run train_clap first, or point "
                                f"{section}.base_model at an HF ClapModel folder or hub id)")
    return resolve_hf_checkpoint(base_model, revision=revision)
