"""A CLAP whose text tower is the real all-MiniLM-L6-v2 (issue 12: a pretrained text tower).

The model is a plain transformers ``ClapModel``: its RoBERTa-style text tower
(``ClapTextModel``) has the same layers as MiniLM's ``BertModel`` (6 layers, hidden 384,
12 heads, GELU, post-LN), so the MiniLM weights load into it unchanged but for one detail:
RoBERTa-style embeddings number the positions of real tokens from ``pad_token_id + 1``
(here 1, since BERT's ``[PAD]`` is 0), BERT's from 0. The position table is therefore
shifted by one row (:func:`load_minilm_text_tower`); the converted tower reproduces
``BertModel``'s hidden states (checked in the tests to 1e-5). The WordPiece tokenizer is
MiniLM's own. Because it is a plain ``ClapModel`` saved with ``save_pretrained``, the
``hf_clap`` backend, the dump format, retrieval evaluation and RobustCLAP take it as they
take the tiny default.

Pooling: ``ClapModel`` projects the text tower's pooler output (a dense + tanh layer over the
first token), as LAION-CLAP's RoBERTa branch does; MiniLM ships that pooler's weights from
its BERT pre-training. all-MiniLM-L6-v2 itself was tuned with mean pooling, so a frozen
tower starts from a first-token summary it was not tuned for; the training study
(``text_trainable_layers``) measures how much fine-tuning that needs (docs/encoders.md).

The audio tower is the tiny HTSAT of :mod:`clapcap.clap.model`, trained from scratch as in
the synthetic CLAP. The text tower trains at its own, smaller learning rate (``text_lr``),
or not at all (``text_trainable_layers: 0``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clapcap.clap.model import TinyClapConfig, build_clap_config, build_feature_extractor
from clapcap.config import ConfigError

logger = logging.getLogger(__name__)

TEXT_TOWER = "sentence-transformers/all-MiniLM-L6-v2"


def clap_text_config(bert_config: Any, *, projection_dim: int) -> dict[str, Any]:
    """``ClapTextConfig`` fields that hold a BERT checkpoint (one extra position row, see module doc)."""
    c = bert_config
    if getattr(c, "position_embedding_type", "absolute") != "absolute":
        raise ConfigError(f"text tower: only absolute position embeddings convert, got {c.position_embedding_type}")
    return dict(vocab_size=c.vocab_size, hidden_size=c.hidden_size, num_hidden_layers=c.num_hidden_layers,
                num_attention_heads=c.num_attention_heads, intermediate_size=c.intermediate_size,
                hidden_act=c.hidden_act, hidden_dropout_prob=c.hidden_dropout_prob,
                attention_probs_dropout_prob=c.attention_probs_dropout_prob,
                max_position_embeddings=c.max_position_embeddings + 1, type_vocab_size=c.type_vocab_size,
                pad_token_id=c.pad_token_id, layer_norm_eps=c.layer_norm_eps, projection_dim=projection_dim)


def load_minilm_text_tower(text_model: Any, bert_state: dict[str, Any]) -> None:
    """Copy a ``BertModel`` state dict into a ``ClapTextModel``, shifting the position table by one.

    Raises:
        ConfigError: when a weight is missing or left over (the two towers do not match).
    """
    import torch

    state = dict(bert_state)
    pos = state["embeddings.position_embeddings.weight"]
    shifted = torch.zeros((pos.shape[0] + 1, pos.shape[1]), dtype=pos.dtype)
    shifted[1:] = pos  # row 0 is the padding position: never read for a real token
    state["embeddings.position_embeddings.weight"] = shifted
    state = {k: v for k, v in state.items() if k not in ("embeddings.position_ids", "embeddings.token_type_ids")}
    res = text_model.load_state_dict(state, strict=False)
    missing = [k for k in res.missing_keys if k not in ("embeddings.position_ids", "embeddings.token_type_ids")]
    if missing or res.unexpected_keys:
        raise ConfigError(f"the text tower does not match the BERT checkpoint: missing {missing}, "
                          f"unexpected {res.unexpected_keys}")


def build_minilm_clap(audio: TinyClapConfig, text_dir: str | Path, *, seed: int = 0) -> tuple[Any, Any, Any]:
    """A ``ClapModel`` with a random tiny audio tower and the MiniLM text tower of ``text_dir``.

    Returns:
        ``(ClapModel, tokenizer, feature_extractor)``; the tokenizer is MiniLM's WordPiece
        tokenizer, capped at ``audio.max_text_length`` tokens and giving no token type ids
        (``ClapModel`` takes none).
    """
    import torch
    from transformers import AutoTokenizer, BertModel, ClapConfig, ClapModel

    bert = BertModel.from_pretrained(str(text_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(text_dir), model_max_length=audio.max_text_length,
                                              model_input_names=["input_ids", "attention_mask"])
    audio_config = build_clap_config(audio, vocab_size=bert.config.vocab_size).audio_config.to_dict()
    config = ClapConfig(text_config=clap_text_config(bert.config, projection_dim=audio.projection_dim),
                        audio_config=audio_config, projection_dim=audio.projection_dim)
    torch.manual_seed(seed)
    model = ClapModel(config)
    load_minilm_text_tower(model.text_model, bert.state_dict())
    return model, tokenizer, build_feature_extractor(audio)


def set_text_trainable(model: Any, layers: int) -> list[Any]:
    """Freeze the text tower but its top ``layers`` layers and pooler (-1: train all of it).

    Returns:
        The text tower's trainable parameters.
    """
    tower = model.text_model
    n = len(tower.encoder.layer)
    for p in tower.parameters():
        p.requires_grad = layers < 0
    if layers > 0:
        for layer in tower.encoder.layer[max(0, n - layers):]:
            for p in layer.parameters():
                p.requires_grad = True
        for p in tower.pooler.parameters():
            p.requires_grad = True
    return [p for p in tower.parameters() if p.requires_grad]


def text_param_groups(text_lr: float) -> Callable[[Any], list[dict[str, Any]]]:
    """AdamW parameter groups for :func:`clapcap.clap.train.fit`: the text tower's trainable
    parameters at ``text_lr``, everything else at the optimizer's own learning rate."""

    def groups(model: Any) -> list[dict[str, Any]]:
        text = {id(p) for p in model.text_model.parameters()}
        rest = [p for p in model.parameters() if id(p) not in text]
        trainable_text = [p for p in model.text_model.parameters() if p.requires_grad]
        out = [{"params": rest}]
        if trainable_text:
            out.append({"params": trainable_text, "lr": text_lr})
        return out

    return groups
