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

Folders and hub ids resolve through :func:`clapcap.utils.hub.resolve_model`, which a
captioner's pretrained LM uses too. Every mistake here is one :class:`~clapcap.errors.InputError`
naming the checkpoint and what to do, raised before transformers or laion_clap load anything (so never a hub retry loop, a
traceback, or random weights in place of a mistyped path). :meth:`ResolvedCheckpoint.record`
is what a dump's meta, an MLflow run and a model card keep, so two results from two revisions
of one hub repository can be told apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap.errors import InputError
from clapcap.utils.hub import (
    ResolvedCheckpoint,
    check_weights,
    looks_like_path,
    resolve_model,
)
from clapcap.utils.io import sha256_file

LAION_SUFFIXES = (".pt", ".pth", ".ckpt")
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer_config.json")
PROCESSOR_FILE = "preprocessor_config.json"
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


def check_pretrained_folder(folder: Path, source: str) -> None:
    """Raise InputError unless ``folder`` holds a model, its tokenizer and its feature extractor."""
    check_weights(folder, source)
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
    if not path.is_dir() and path.suffix in LAION_SUFFIXES:
        raise InputError(f"{checkpoint}: no such file (and a {path.suffix} file is a laion_clap checkpoint: "
                         "--backend laion_clap)")
    return resolve_model(checkpoint, check=check_pretrained_folder, revision=revision, cache_dir=cache_dir)


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
    folder (the project's own ``models/synth_clap/model``) or a published hub id.

    Raises:
        FileNotFoundError: a folder that does not exist (names the stage that builds the default).
        InputError: as :func:`resolve_hf_checkpoint`.
    """
    if looks_like_path(base_model) and not Path(base_model).expanduser().exists():
        raise FileNotFoundError(f"{base_model}: base CLAP folder not found (run train_clap first, or point "
                                f"{section}.base_model at an HF ClapModel folder or hub id)")
    return resolve_hf_checkpoint(base_model, revision=revision)
