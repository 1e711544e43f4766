"""Convert a laion_clap (LAION-CLAP) state dict into a transformers ``ClapModel``.

Written for this project after the conversion script that transformers keeps in its
repository (``convert_clap_original_pytorch_to_hf.py``, not shipped in the pip package):

- keys are renamed by substring, in order (:data:`RENAMES`): ``text_branch`` ->
  ``text_model``, ``audio_branch`` -> ``audio_model.audio_encoder``, ``attn`` ->
  ``attention.self``, ``bn0`` -> ``batch_norm``, ...;
- the audio blocks' fused ``qkv`` weight/bias is split into ``query``/``key``/``value``;
- projection MLPs ``*_projection.0/.2`` become ``*_projection.linear1/.linear2``;
- laion-only tensors (STFT/mel buffers, ``tscam_conv``/``head`` classifiers,
  ``*_transform`` MLPs, Swin ``attn_mask`` buffers) are dropped.

The HF config is inferred from tensor shapes, and RoBERTa's ``layer_norm_eps=1e-5`` is set
(transformers' script leaves 1e-12, which costs 5e-5 in text embeddings). The feature
extractor is saved with ``frequency_min=50, frequency_max=14000`` (laion's mel range;
HF's default ``frequency_min=0`` drops audio cosine to 0.994-0.998).
"""

from __future__ import annotations

import logging
import math
import pickle
import re
from pathlib import Path
from typing import Any

from clapcap.encoders.checkpoints import STAND_IN_MARK, is_stand_in
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

RENAMES = [
    ("text_branch", "text_model"), ("audio_branch", "audio_model.audio_encoder"),
    ("attn", "attention.self"), ("self.proj", "output.dense"), ("attention.self_mask", "attn_mask"),
    ("mlp.fc1", "intermediate.dense"), ("mlp.fc2", "output.dense"), ("norm1", "layernorm_before"),
    ("norm2", "layernorm_after"), ("bn0", "batch_norm"),
]
DROP = re.compile(r"(spectrogram_extractor|logmel_extractor|tscam_conv|audio_branch\.head\.|"
                  r"text_transform|audio_transform|attn_mask$)")
_PROJ = re.compile(r"^(text|audio)_projection\.(\d+)\.")
HF_OPTIONAL = re.compile(r"(position_ids|token_type_ids|num_batches_tracked)$")


class ConversionError(InputError, ValueError):
    """The state dict does not map onto the inferred ClapModel; lists the offending keys."""


def strip_module_prefix(state_dict: dict[str, Any]) -> dict[str, Any]:
    """Remove the DataParallel ``module.`` prefix laion checkpoints carry."""
    return {k[len("module."):] if k.startswith("module.") else k: v for k, v in state_dict.items()}


def rename_key(key: str) -> str:
    """The HF name of a laion key (before the qkv split)."""
    for old, new in RENAMES:
        key = key.replace(old, new)
    m = _PROJ.match(key)
    if m:
        layer = {"0": "linear1", "2": "linear2"}.get(m.group(2))
        if layer is None:
            raise ConversionError(f"unexpected projection layer index in {key!r}")
        key = key.replace(f"_projection.{m.group(2)}.", f"_projection.{layer}.", 1)
    return key


def convert_state_dict(state_dict: dict[str, Any]) -> dict[str, Any]:
    """laion_clap state dict (with or without ``module.``) -> HF ``ClapModel`` state dict."""
    out: dict[str, Any] = {}
    for key, value in strip_module_prefix(state_dict).items():
        if DROP.search(key):
            continue
        new = rename_key(key)
        if ".qkv." in new:
            q, k, v = value.chunk(3, dim=0)
            for name, part in (("query", q), ("key", k), ("value", v)):
                out[new.replace(".qkv.", f".{name}.")] = part.clone()
        else:
            out[new] = value
    return out


def infer_config(state_dict: dict[str, Any], *, spec_size: int | None = None) -> Any:
    """A transformers ``ClapConfig`` matching a laion_clap state dict (shapes only)."""
    from transformers import ClapConfig

    sd = strip_module_prefix(state_dict)
    tb, ab = "text_branch.", "audio_branch."
    emb = sd[tb + "embeddings.word_embeddings.weight"]
    hidden = int(emb.shape[1])
    n_text = len({int(m.group(1)) for k in sd if (m := re.match(r"text_branch\.encoder\.layer\.(\d+)\.", k))})
    text = dict(vocab_size=int(emb.shape[0]), hidden_size=hidden, num_hidden_layers=n_text,
                num_attention_heads=max(1, hidden // 64),
                intermediate_size=int(sd[tb + "encoder.layer.0.intermediate.dense.weight"].shape[0]),
                max_position_embeddings=int(sd[tb + "embeddings.position_embeddings.weight"].shape[0]),
                type_vocab_size=int(sd[tb + "embeddings.token_type_embeddings.weight"].shape[0]),
                layer_norm_eps=1e-5, projection_dim=int(sd["text_projection.0.weight"].shape[0]))
    blocks: dict[int, set[int]] = {}
    for k in sd:
        m = re.match(r"audio_branch\.layers\.(\d+)\.blocks\.(\d+)\.", k)
        if m:
            blocks.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
    depths = [len(blocks[i]) for i in sorted(blocks)]
    heads = [int(sd[f"{ab}layers.{i}.blocks.0.attn.relative_position_bias_table"].shape[1]) for i in sorted(blocks)]
    table = int(sd[f"{ab}layers.0.blocks.0.attn.relative_position_bias_table"].shape[0])
    window = (math.isqrt(table) + 1) // 2
    proj = sd[ab + "patch_embed.proj.weight"]  # (C, 1, p, p)
    if spec_size is None:
        mask = sd.get(f"{ab}layers.0.blocks.1.attn_mask")  # (nW, w*w, w*w) of the shifted block
        if mask is None:
            logger.warning("spec_size cannot be inferred (stage 0 has no shifted block); assuming 256")
        spec_size = int(math.isqrt(mask.shape[0]) * window * proj.shape[-1]) if mask is not None else 256
    audio = dict(depths=depths, num_attention_heads=heads, window_size=window, spec_size=spec_size,
                 patch_size=int(proj.shape[-1]), patch_stride=[int(proj.shape[-2]), int(proj.shape[-1])],
                 patch_embeds_hidden_size=int(proj.shape[0]), hidden_size=int(sd[ab + "norm.weight"].shape[0]),
                 num_mel_bins=int(sd[ab + "bn0.weight"].shape[0]),
                 enable_fusion=any("patch_embed.mel_conv2d" in k for k in sd), fusion_type="aff_2d",
                 projection_dim=int(sd["audio_projection.0.weight"].shape[0]))
    if not audio["enable_fusion"]:
        audio["fusion_type"] = None
    return ClapConfig(text_config=text, audio_config=audio, projection_dim=audio["projection_dim"])


def convert_laion_state_dict(state_dict: dict[str, Any], *, spec_size: int | None = None) -> Any:
    """Build a ``ClapModel`` holding the laion weights.

    Returns:
        The HF ``ClapModel`` in eval mode.

    Raises:
        ConversionError: listing keys that are missing from or unexpected by the HF model.
    """
    from transformers import ClapModel

    model = ClapModel(infer_config(state_dict, spec_size=spec_size))
    converted = convert_state_dict(state_dict)
    missing, unexpected = model.load_state_dict(converted, strict=False)
    missing = [k for k in missing if not HF_OPTIONAL.search(k)]
    if missing or unexpected:
        raise ConversionError(f"laion -> HF conversion: {len(missing)} missing keys {missing[:5]}, "
                              f"{len(unexpected)} unexpected keys {unexpected[:5]}")
    return model.eval()


def convert_laion_checkpoint(checkpoint: str | Path, out_dir: str | Path, *, tokenizer: str = "roberta-base",
                             spec_size: int | None = None) -> Path:
    """Convert a laion ``.pt`` checkpoint into an HF folder for the ``hf_clap`` backend.

    The folder gets the model, the RoBERTa tokenizer ``tokenizer`` (hub id or folder,
    ``model_max_length=77`` like laion) and a ``ClapFeatureExtractor`` with laion's mel range.

    Returns:
        ``out_dir``.

    Raises:
        FileNotFoundError: when ``checkpoint`` does not exist.
        ConversionError: when the file is not a PyTorch checkpoint or its state dict does
            not map onto the model.
    """
    import torch
    from transformers import AutoTokenizer, ClapFeatureExtractor

    checkpoint = Path(checkpoint)
    if not checkpoint.is_file():
        raise FileNotFoundError(f"{checkpoint}: laion_clap checkpoint not found")
    try:
        raw = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, KeyError, OSError, EOFError, ValueError) as err:
        # torch reports a file that is not a checkpoint as `KeyError: 101`, `EOFError` or
        # `[Errno 22]`, without the path.
        raise ConversionError(f"{checkpoint}: not a readable PyTorch checkpoint "
                              f"({type(err).__name__}: {err})") from err
    sd = raw["state_dict"] if isinstance(raw, dict) and "state_dict" in raw else raw
    model = convert_laion_state_dict(sd, spec_size=spec_size)
    fusion = bool(model.config.audio_config.enable_fusion)
    tok = AutoTokenizer.from_pretrained(tokenizer, model_max_length=77)
    if is_stand_in(tok) and not (isinstance(raw, dict) and raw.get(STAND_IN_MARK) == "stand-in"):
        raise InputError(f"{checkpoint}: a real laion_clap checkpoint, but tokenizer {tokenizer!r} is clapcap's "
                         "offline stand-in (GPT-2 ids shifted by 4, for random weights only); the converted "
                         "folder would embed captions with the wrong token ids: convert with the real "
                         "roberta-base tokenizer cached")
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    ClapFeatureExtractor(frequency_min=50, frequency_max=14000,
                         truncation="fusion" if fusion else "rand_trunc").save_pretrained(out_dir)
    logger.info("converted %s -> %s (fusion=%s)", checkpoint, out_dir, fusion)
    return out_dir
