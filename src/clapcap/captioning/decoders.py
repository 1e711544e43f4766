"""Language-model decoders for the prefix captioner: GPT-2 (decoder-only), T5 (encoder-decoder)
and ``causal``, any pretrained decoder-only LM (SmolLM2-135M in the study, or ``gpt2``).

A decoder comes either from a pretrained LM or, for ``gpt2`` and ``t5``, from a small config
for the embedded default. A pretrained LM is named by ``CaptionerConfig.pretrained``: a hub id
(``gpt2``, ``t5-base``) at ``pretrained_revision``, or a local ``save_pretrained`` folder (the
converted SmolLM2 of :mod:`clapcap.captioning.smollm2`); or by the older ``pretrained_dir``, a
local folder only. :func:`resolve_lm` resolves it once, through the mechanism CLAP
checkpoints use (:func:`clapcap.utils.hub.resolve_model`: one snapshot of the hub cache,
offline with ``HF_HUB_OFFLINE=1``, recorded by its commit; a folder by its weights' SHA-256),
and the model is then loaded from those local files with ``local_files_only``.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from clapcap.captioning.config import CaptionerConfig
from clapcap.errors import InputError
from clapcap.utils.hub import (
    FolderCheck,
    ResolvedCheckpoint,
    check_weights,
    looks_like_path,
    resolve_model,
    weights_sha256,
)

logger = logging.getLogger(__name__)

DECODERS = ("gpt2", "t5", "causal")
LM_DTYPES = ("float32", "bfloat16")
# Any of these is a saved tokenizer (``spiece.model``: t5-base's sentencepiece model).
LM_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "spiece.model")


def _check_lm_folder(need_tokenizer: bool) -> FolderCheck:
    def check(folder: Path, source: str) -> None:
        check_weights(folder, source)
        if need_tokenizer and not any((folder / f).is_file() for f in LM_TOKENIZER_FILES):
            raise InputError(f"{source}: no tokenizer ({', '.join(LM_TOKENIZER_FILES)}), and the captioner uses "
                             "the LM's own (tokenizer: pretrained); save it there with `tokenizer.save_pretrained()`")

    return check


def resolve_lm(cfg: CaptionerConfig, *, hash_folder: bool = True) -> ResolvedCheckpoint | None:
    """The pretrained LM of ``cfg`` as local files, and what identifies it; None for a small decoder.

    ``pretrained``: a hub id resolves to its snapshot at ``pretrained_revision`` (the record is
    the snapshot's commit), a folder to itself (the record is its weights' SHA-256 unless
    ``hash_folder`` is False). ``pretrained_dir``: a local folder, as before.

    Raises:
        InputError: as :func:`clapcap.utils.hub.resolve_model` (an uncached id offline names the
            ``hf download`` command; a revision that does not exist is refused), or a hub id
            written in ``pretrained_dir``.
        FileNotFoundError: a ``pretrained_dir`` without ``config.json``.
    """
    if cfg.pretrained_dir:
        folder = Path(cfg.pretrained_dir).expanduser()
        if not folder.exists() and not looks_like_path(cfg.pretrained_dir):
            raise InputError(f"pretrained_dir {cfg.pretrained_dir!r} is not a folder; a hub id goes in "
                             f"`pretrained: {cfg.pretrained_dir}` (with `pretrained_revision` for a branch, tag "
                             "or commit)")
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{folder}: expected a pretrained {cfg.decoder} folder with config.json")
        return ResolvedCheckpoint(cfg.pretrained_dir, folder, "folder",
                                  sha256=weights_sha256(folder) if hash_folder else None)
    if not cfg.pretrained:
        return None
    return resolve_model(cfg.pretrained, check=_check_lm_folder(cfg.tokenizer_kind() == "pretrained"),
                         revision=cfg.pretrained_revision, hash_folder=hash_folder)


def pin_lm(cfg: CaptionerConfig, lm: ResolvedCheckpoint | None) -> CaptionerConfig:
    """``cfg`` with a hub LM's revision replaced by the commit it resolved to, so that a saved
    captioner reloads exactly that snapshot (a branch such as ``main`` may move)."""
    if lm is None or lm.kind != "hub":
        return cfg
    return dataclasses.replace(cfg, pretrained_revision=lm.revision)


def _small_gpt2(vocab_size: int, n_positions: int, *, hidden: int, layers: int, heads: int,
                eos_id: int, pad_id: int) -> Any:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=vocab_size, n_positions=n_positions, n_embd=hidden, n_layer=layers,
                     n_head=heads, bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=pad_id)
    return GPT2LMHeadModel(cfg)


def _small_t5(vocab_size: int, *, hidden: int, layers: int, heads: int, eos_id: int, pad_id: int) -> Any:
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=vocab_size, d_model=hidden, d_kv=hidden // heads, d_ff=4 * hidden,
                   num_layers=layers, num_decoder_layers=layers, num_heads=heads,
                   eos_token_id=eos_id, pad_token_id=pad_id, decoder_start_token_id=pad_id,
                   feed_forward_proj="relu", tie_word_embeddings=True)
    return T5ForConditionalGeneration(cfg)


def _pretrained(kind: str, folder: str, dtype: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, T5ForConditionalGeneration

    path = Path(folder)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: expected a pretrained {kind} folder with config.json")
    cls = T5ForConditionalGeneration if kind == "t5" else AutoModelForCausalLM
    return cls.from_pretrained(str(path), local_files_only=True, dtype=getattr(torch, dtype))


def build_decoder(kind: str, tokenizer: Any, *, pretrained_dir: str = "", hidden: int = 96,
                  layers: int = 2, heads: int = 4, n_positions: int = 128, dtype: str = "float32") -> Any:
    """Build a decoder LM whose vocabulary covers ``tokenizer``.

    ``pretrained_dir`` is a local folder (:func:`resolve_lm`'s path). ``dtype`` is the LM's
    weight dtype: ``bfloat16`` halves the cost of a frozen pretrained LM's forward and backward
    passes on a CPU with AVX-512 BF16 (measured for SmolLM2-135M: 0.07 s per caption instead
    of 0.12 s, docs/captioning.md).

    Returns:
        A ``GPT2LMHeadModel`` (or any causal LM from ``pretrained_dir``) for ``gpt2``, the
        causal LM of ``pretrained_dir`` for ``causal``, a ``T5ForConditionalGeneration``
        for ``t5``; its generation config has the tokenizer's pad and eos ids.

    Raises:
        ValueError: on an unknown kind or dtype, ``causal`` without ``pretrained_dir``, or a
            hidden size not divisible by ``heads``.
        FileNotFoundError: when ``pretrained_dir`` has no ``config.json``.
    """
    if kind not in DECODERS:
        raise ValueError(f"decoder: expected one of {list(DECODERS)}, found {kind!r}")
    if dtype not in LM_DTYPES:
        raise ValueError(f"decoder dtype: expected one of {list(LM_DTYPES)}, found {dtype!r}")
    if kind == "causal" and not pretrained_dir:
        raise ValueError("decoder causal: a pretrained decoder-only LM, so pretrained (a hub id or folder) or "
                         "pretrained_dir must be set")
    eos_id, pad_id = tokenizer.eos_token_id, tokenizer.pad_token_id
    if pretrained_dir:
        model = _pretrained(kind, pretrained_dir, dtype)
        if model.get_input_embeddings().num_embeddings < len(tokenizer):
            model.resize_token_embeddings(len(tokenizer))
    else:
        if hidden % heads:
            raise ValueError(f"decoder hidden {hidden} is not divisible by heads {heads}")
        if kind == "gpt2":
            model = _small_gpt2(len(tokenizer), n_positions, hidden=hidden, layers=layers,
                                heads=heads, eos_id=eos_id, pad_id=pad_id)
        else:
            model = _small_t5(len(tokenizer), hidden=hidden, layers=layers, heads=heads,
                              eos_id=eos_id, pad_id=pad_id)
        if dtype != "float32":
            import torch

            model = model.to(getattr(torch, dtype))
    gen = model.generation_config
    gen.eos_token_id, gen.pad_token_id = eos_id, pad_id
    if kind == "t5":
        gen.decoder_start_token_id = model.config.decoder_start_token_id
    return model


def lm_hidden_size(model: Any) -> int:
    """Width of the decoder's input embeddings (the prefix width)."""
    return int(model.get_input_embeddings().embedding_dim)
