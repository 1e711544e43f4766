"""Caption generation from audio embeddings with Hugging Face ``generate``.

The prefix is passed as ``inputs_embeds`` to both decoders: GPT-2 continues after it,
T5 reads it as its encoder input. Every option of :class:`DecodingConfig` maps to a
``generate`` argument, then the text is post-processed with
:func:`clapcap.evaluation.text.postprocess` (trim to the last sentence, to N words).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from clapcap.captioning.config import DecodingConfig
from clapcap.evaluation.text import postprocess

logger = logging.getLogger(__name__)


def as_embedding_tensor(embeds: Any, in_dim: int) -> torch.Tensor:
    """Check and convert audio embeddings to a float32 (B, in_dim) tensor.

    3-D input (B, T, D) from a frame-level encoder is mean-pooled over time.

    Raises:
        TypeError: when ``embeds`` is not an array or tensor.
        ValueError: on a wrong shape, a wrong width, no rows or non-finite values.
    """
    if isinstance(embeds, np.ndarray):
        embeds = torch.from_numpy(np.asarray(embeds, dtype=np.float32))
    if not isinstance(embeds, torch.Tensor):
        raise TypeError(f"expected a numpy array or torch tensor of embeddings, found {type(embeds).__name__}")
    if embeds.ndim == 3:
        embeds = embeds.mean(dim=1)  # (B, T, D) -> (B, D)
    if embeds.ndim != 2 or embeds.shape[0] == 0 or embeds.shape[1] != in_dim:
        raise ValueError(f"expected embeddings of shape (B>=1, {in_dim}), found {tuple(embeds.shape)}")
    if not torch.isfinite(embeds).all():
        raise ValueError("embeddings contain NaN or infinite values")
    return embeds.float()


def line_complete(text: str) -> bool:
    """True once ``text`` holds a whole first line (non-blank, ended by a line break): what
    :func:`first_line` keeps of it can no longer change."""
    lines = text.lstrip().splitlines(keepends=True)
    return bool(lines) and lines[0].splitlines()[0] != lines[0]


def _line_end_criteria(tokenizer: Any) -> Any:
    """A row stops once its first line is complete (:func:`line_complete`). Nothing after that
    line survives :func:`first_line`, and a row's tokens do not depend on the other rows, so
    the captions are the same as without it; a pretrained LM that goes on past its caption's
    line (SmolLM2 does) then stops there instead of at ``max_new_tokens``.

    Hand-written: transformers' ``stop_strings`` needs the tokenizer passed to every call,
    and stops at any line break, a leading blank line included.
    """
    from transformers import StoppingCriteria, StoppingCriteriaList

    class LineEnd(StoppingCriteria):
        def __call__(self, input_ids: torch.Tensor, scores: Any, **_: Any) -> torch.Tensor:
            texts = tokenizer.batch_decode(input_ids, skip_special_tokens=True)
            return torch.tensor([line_complete(t) for t in texts], dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([LineEnd()])


def _generate_batch(model: Any, embeds: torch.Tensor, kwargs: dict[str, Any], use_cache: bool,
                    stop_at_line_end: bool = True) -> list[str]:
    prefix = model.prefix(embeds)  # (B, P, H)
    mask = torch.ones(prefix.shape[:2], dtype=torch.long, device=prefix.device)
    tok = model.tokenizer
    if stop_at_line_end and kwargs.get("num_beams", 1) == 1:  # beams compete: a stop would change them
        kwargs = {**kwargs, "stopping_criteria": _line_end_criteria(tok)}
    out = model.lm.generate(inputs_embeds=prefix, attention_mask=mask, use_cache=use_cache,
                            eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **kwargs)
    return [first_line(text) for text in tok.batch_decode(out, skip_special_tokens=True)]


def first_line(text: str) -> str:
    """A generated caption is one line: the text up to its first line break (leading blank
    lines skipped), stripped. A pretrained chat LM such as SmolLM2 may go on past a newline
    with text that is no longer the caption, and the PTB tokenizer refuses line breaks."""
    lines = [line.strip() for line in text.strip().splitlines()]
    return lines[0] if lines else ""


@torch.no_grad()
def generate_captions(model: Any, embeds: Any, cfg: DecodingConfig | None = None, *,
                      batch_size: int = 64, use_cache: bool = True, stop_at_line_end: bool = True) -> list[str]:
    """Caption each row of ``embeds`` with ``model`` (a ``ClipCapCaptioner``).

    ``stop_at_line_end``: greedy and sampled rows stop once their first line is complete (the
    same captions, fewer steps: :func:`_line_end_criteria`).

    Returns:
        One post-processed caption per row, in order.

    Raises:
        ValueError / TypeError: on invalid embeddings or decoding options.
    """
    cfg = cfg or DecodingConfig()
    cfg.validate()
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, found {batch_size}")
    x = as_embedding_tensor(embeds, model.cfg.in_dim)
    model.eval()
    device = next(model.parameters()).device
    kwargs = cfg.generate_kwargs()
    if cfg.strategy == "sample":
        torch.manual_seed(cfg.seed)
    texts: list[str] = []
    for start in range(0, x.shape[0], batch_size):
        texts += _generate_batch(model, x[start:start + batch_size].to(device), kwargs, use_cache, stop_at_line_end)
    return [postprocess(t, trim_sentences=cfg.trim_sentences, trim_words=cfg.trim_words) for t in texts]
