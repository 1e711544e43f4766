"""Tiny language models in the layout of the hub's ``gpt2`` and ``t5-base``, for offline tests.

:func:`build_gpt2` writes a ``save_pretrained`` folder like ``gpt2``'s: a ``GPT2LMHeadModel``
(tiny sizes, random weights) and a ``GPT2TokenizerFast`` whose vocabulary is GPT-2's 256
byte symbols plus ``<|endoftext|>`` (no merges). :func:`build_t5` writes one like ``t5-base``'s:
a ``T5ForConditionalGeneration`` and a ``T5TokenizerFast`` (``<pad>`` 0, ``</s>`` 1, ``<unk>``
2, as T5's). The real T5 tokenizer is a sentencepiece model (``spiece.model``), which cannot be
built without the ``sentencepiece`` package: this one is a ``tokenizers`` Unigram model with a
Metaspace pre-tokenizer (sentencepiece's ``\u2581`` word boundary), saved as ``tokenizer.json``,
the file ``AutoTokenizer`` loads for ``t5-base`` too. :func:`published_clap.put_in_hub_cache` places
either folder in a hub cache.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from published_clap import _byte_symbols


def build_gpt2(out: Path, *, seed: int = 0) -> Path:
    """Write a tiny ``gpt2``-layout folder (model and tokenizer) to ``out``; returns ``out``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    vocab = {t: i for i, t in enumerate([*_byte_symbols(), "<|endoftext|>"])}
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "merges.txt").write_text("#version: 0.2\n")
    tok = GPT2TokenizerFast(vocab_file=str(out / "vocab.json"), merges_file=str(out / "merges.txt"))
    torch.manual_seed(seed)
    eos = vocab["<|endoftext|>"]
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=128, n_embd=32, n_layer=1, n_head=2,
                                       bos_token_id=eos, eos_token_id=eos))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def build_t5(out: Path, *, seed: int = 0) -> Path:
    """Write a tiny ``t5-base``-layout folder (model and tokenizer) to ``out``; returns ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import T5Config, T5ForConditionalGeneration, T5TokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    chars = string.ascii_letters + string.digits + ".,'-!?"
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -2.0),
              *((f"\u2581{c}", -3.0) for c in chars), *((c, -4.0) for c in chars)]
    backend = Tokenizer(models.Unigram(pieces, unk_id=2))
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    tok = T5TokenizerFast(tokenizer_object=backend, eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
                          extra_ids=0)
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(T5Config(
        vocab_size=len(pieces), d_model=32, d_kv=16, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=2,
        eos_token_id=1, pad_token_id=0, decoder_start_token_id=0))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
