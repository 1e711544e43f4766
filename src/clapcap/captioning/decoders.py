"""Language-model decoders for the prefix captioner: GPT-2 (decoder-only), T5 (encoder-decoder)
and ``causal``, any pretrained decoder-only LM (SmolLM2-135M in the study).

A decoder comes either from a local pretrained folder (a user's ``gpt2`` or ``t5-base``, or
the converted SmolLM2 of :mod:`clapcap.captioning.smollm2`, loaded with ``local_files_only``)
or, for ``gpt2`` and ``t5``, from a small config for the embedded default.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DECODERS = ("gpt2", "t5", "causal")
LM_DTYPES = ("float32", "bfloat16")


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

    ``dtype`` is the LM's weight dtype: ``bfloat16`` halves the cost of a frozen pretrained
    LM's forward and backward passes on a CPU with AVX-512 BF16 (measured for SmolLM2-135M:
    0.07 s per caption instead of 0.12 s, docs/captioning.md).

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
        raise ValueError("decoder causal: a pretrained decoder-only LM, so pretrained_dir must be set")
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
