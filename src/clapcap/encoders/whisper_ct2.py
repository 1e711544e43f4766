"""Convert a CTranslate2 Whisper (``WhisperSpec``) into a transformers ``WhisperForConditionalGeneration``.

The configuration is inferred from the variables' shapes and scalars (width, layers, heads,
feed-forward width, mel bins, positions, vocabulary) and the special tokens from the
model folder's ``tokenizer.json``. The weights map one to one, except CTranslate2's fused
projections, which are split back:

- self-attention ``linear_0`` (3d, d) -> ``q_proj``, ``k_proj``, ``v_proj`` (Whisper's
  ``k_proj`` has no bias; CTranslate2 stores zeros there, which :func:`ct2_to_hf_state_dict`
  checks);
- cross-attention ``linear_0`` -> ``q_proj`` and ``linear_1`` (2d, d) -> ``k_proj``, ``v_proj``.

``proj_out`` is tied to the token embeddings, as CTranslate2's alias
``decoder/projection/weight -> decoder/embeddings/weight`` says. fp16 weights become fp32.
The converted folder is cached once (:func:`ensure_whisper_cache`): ``save_pretrained`` of
the model, a ``WhisperFeatureExtractor`` with the model's mel bins and the tokenizer, plus a
``clapcap_source.json`` recording the SHA-256 of the ``model.bin`` it came from.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.encoders.ct2 import Ct2Model, read_ct2_model
from clapcap.utils.io import atomic_dir, read_json, record_matches, sha256_file, write_json

logger = logging.getLogger(__name__)

# Bump when the conversion changes, so that an older cache is rebuilt.
CONVERTER_VERSION = 1
SOURCE_FILE = "clapcap_source.json"
# CTranslate2's ActivationType enum (include/ctranslate2/ops/activation.h): 3 is the exact GELU.
_GELU = 3


def _n_layers(model: Ct2Model, side: str) -> int:
    found = {int(m.group(1)) for name in model.variables if (m := re.match(rf"{side}/layer_(\d+)/", name))}
    if not found or found != set(range(len(found))):
        raise ValueError(f"{model.spec}: {side} layers are not numbered 0..n-1 (found {sorted(found)})")
    return len(found)


def special_tokens(tokenizer_json: str | Path) -> dict[str, int]:
    """Ids of the added tokens of a Whisper ``tokenizer.json``: ``{"<|endoftext|>": 50256, ...}``."""
    data = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    return {t["content"]: int(t["id"]) for t in data.get("added_tokens", [])}


def whisper_config_from_ct2(model: Ct2Model, tokens: dict[str, int]) -> Any:
    """The ``WhisperConfig`` whose shapes match ``model``.

    Args:
        tokens: the special tokens (:func:`special_tokens`); ``<|endoftext|>`` and
            ``<|startoftranscript|>`` are required.

    Raises:
        ValueError: when ``model`` is not a pre-norm GELU Whisper or a special token is missing.
    """
    from transformers import WhisperConfig

    if model.spec != "WhisperSpec":
        raise ValueError(f"expected a CTranslate2 WhisperSpec model, found spec {model.spec!r}")
    if int(model.scalar("decoder/activation")) != _GELU or not int(model.scalar("decoder/pre_norm")):
        raise ValueError("expected a pre-norm Whisper decoder with the exact GELU (activation 3)")
    for tok in ("<|endoftext|>", "<|startoftranscript|>"):
        if tok not in tokens:
            raise ValueError(f"tokenizer.json has no {tok} token")
    conv1 = model.get("encoder/conv1/weight")  # (d, n_mels, 3)
    eot = tokens["<|endoftext|>"]
    return WhisperConfig(
        vocab_size=model.get("decoder/embeddings/weight").shape[0], num_mel_bins=conv1.shape[1], d_model=conv1.shape[0],
        encoder_layers=_n_layers(model, "encoder"), decoder_layers=_n_layers(model, "decoder"),
        encoder_attention_heads=int(model.scalar("encoder/num_heads")),
        decoder_attention_heads=int(model.scalar("decoder/num_heads")),
        encoder_ffn_dim=model.get("encoder/layer_0/ffn/linear_0/weight").shape[0],
        decoder_ffn_dim=model.get("decoder/layer_0/ffn/linear_0/weight").shape[0],
        max_source_positions=model.get("encoder/position_encodings/encodings").shape[0],
        max_target_positions=model.get("decoder/position_encodings/encodings").shape[0],
        activation_function="gelu", scale_embedding=bool(model.scalar("decoder/scale_embeddings")),
        bos_token_id=eot, eos_token_id=eot, pad_token_id=eot, decoder_start_token_id=tokens["<|startoftranscript|>"],
        tie_word_embeddings=True,
    )


def _split(w: np.ndarray, parts: int, name: str) -> list[np.ndarray]:
    if w.shape[0] % parts:
        raise ValueError(f"{name}: first dimension {w.shape[0]} is not divisible by {parts}")
    return np.split(w, parts, axis=0)


def _attention(model: Ct2Model, src: str, dst: str, fused_qkv: bool) -> dict[str, np.ndarray]:
    """HF q/k/v/out projections of one CTranslate2 attention block (self: fused qkv; cross: q, fused kv)."""
    if fused_qkv:
        qw, kw, vw = _split(model.get(f"{src}/linear_0/weight"), 3, src)
        qb, kb, vb = _split(model.get(f"{src}/linear_0/bias"), 3, src)
        out = "linear_1"
    else:
        qw, qb = model.get(f"{src}/linear_0/weight"), model.get(f"{src}/linear_0/bias")
        kw, vw = _split(model.get(f"{src}/linear_1/weight"), 2, src)
        kb, vb = _split(model.get(f"{src}/linear_1/bias"), 2, src)
        out = "linear_2"
    if np.abs(kb.astype(np.float32)).max() > 0:  # Whisper's key projection has no bias
        raise ValueError(f"{src}: the key bias is not zero; not a Whisper attention block")
    return {f"{dst}.q_proj.weight": qw, f"{dst}.q_proj.bias": qb, f"{dst}.k_proj.weight": kw,
            f"{dst}.v_proj.weight": vw, f"{dst}.v_proj.bias": vb,
            f"{dst}.out_proj.weight": model.get(f"{src}/{out}/weight"), f"{dst}.out_proj.bias": model.get(f"{src}/{out}/bias")}


def _norm(model: Ct2Model, src: str, dst: str) -> dict[str, np.ndarray]:
    return {f"{dst}.weight": model.get(f"{src}/gamma"), f"{dst}.bias": model.get(f"{src}/beta")}


def _ffn(model: Ct2Model, src: str, dst: str) -> dict[str, np.ndarray]:
    return {f"{dst}.fc1.weight": model.get(f"{src}/linear_0/weight"), f"{dst}.fc1.bias": model.get(f"{src}/linear_0/bias"),
            f"{dst}.fc2.weight": model.get(f"{src}/linear_1/weight"), f"{dst}.fc2.bias": model.get(f"{src}/linear_1/bias"),
            **_norm(model, f"{src}/layer_norm", f"{dst}.final_layer_norm")}


def ct2_to_hf_state_dict(model: Ct2Model) -> dict[str, np.ndarray]:
    """The ``WhisperForConditionalGeneration`` state dict (float32 arrays) of a CTranslate2 Whisper.

    Raises:
        KeyError: naming a variable the spec lacks. ValueError: on a non-zero key bias.
    """
    sd: dict[str, np.ndarray] = {}
    for conv in ("conv1", "conv2"):
        sd[f"model.encoder.{conv}.weight"] = model.get(f"encoder/{conv}/weight")
        sd[f"model.encoder.{conv}.bias"] = model.get(f"encoder/{conv}/bias")
    sd["model.encoder.embed_positions.weight"] = model.get("encoder/position_encodings/encodings")
    for i in range(_n_layers(model, "encoder")):
        src, dst = f"encoder/layer_{i}", f"model.encoder.layers.{i}"
        sd |= _attention(model, f"{src}/self_attention", f"{dst}.self_attn", fused_qkv=True)
        sd |= _norm(model, f"{src}/self_attention/layer_norm", f"{dst}.self_attn_layer_norm")
        sd |= _ffn(model, f"{src}/ffn", dst)
    sd |= _norm(model, "encoder/layer_norm", "model.encoder.layer_norm")
    sd["model.decoder.embed_tokens.weight"] = model.get("decoder/embeddings/weight")
    sd["model.decoder.embed_positions.weight"] = model.get("decoder/position_encodings/encodings")
    for i in range(_n_layers(model, "decoder")):
        src, dst = f"decoder/layer_{i}", f"model.decoder.layers.{i}"
        sd |= _attention(model, f"{src}/self_attention", f"{dst}.self_attn", fused_qkv=True)
        sd |= _norm(model, f"{src}/self_attention/layer_norm", f"{dst}.self_attn_layer_norm")
        sd |= _attention(model, f"{src}/attention", f"{dst}.encoder_attn", fused_qkv=False)
        sd |= _norm(model, f"{src}/attention/layer_norm", f"{dst}.encoder_attn_layer_norm")
        sd |= _ffn(model, f"{src}/ffn", dst)
    sd |= _norm(model, "decoder/layer_norm", "model.decoder.layer_norm")
    sd["proj_out.weight"] = model.get("decoder/projection/weight")
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sd.items()}


def convert_ct2_whisper(model_dir: str | Path) -> Any:
    """Build a ``WhisperForConditionalGeneration`` (eval mode, fp32) from a CTranslate2 Whisper folder
    (``model.bin``, ``tokenizer.json``, optional ``config.json``).

    Raises:
        FileNotFoundError / Ct2FormatError: on a missing or malformed ``model.bin``.
        ValueError: when the state dict does not fill the model exactly (names the keys).
    """
    import torch
    from transformers import WhisperForConditionalGeneration

    model_dir = Path(model_dir)
    ct2 = read_ct2_model(model_dir / "model.bin")
    tokens = special_tokens(model_dir / "tokenizer.json")
    hf = WhisperForConditionalGeneration(whisper_config_from_ct2(ct2, tokens)).eval()
    state = {k: torch.from_numpy(v) for k, v in ct2_to_hf_state_dict(ct2).items()}
    missing, unexpected = hf.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{model_dir}: converted weights do not fit WhisperForConditionalGeneration: "
                         f"missing {missing}, unexpected {unexpected}")
    _set_generation(hf.generation_config, tokens, model_dir / "config.json")
    return hf


def _set_generation(gen: Any, tokens: dict[str, int], ct2_config: Path) -> None:
    """CTranslate2's suppressed tokens (its ``config.json``) and the no-timestamps token, on the
    generation config, where transformers looks for them."""
    cfg = read_json(ct2_config) if ct2_config.is_file() else {}
    gen.suppress_tokens = cfg.get("suppress_ids")
    gen.begin_suppress_tokens = cfg.get("suppress_ids_begin")
    if "<|notimestamps|>" in tokens:
        gen.no_timestamps_token_id = tokens["<|notimestamps|>"]


def feature_extractor_for(n_mels: int) -> Any:
    """Whisper's log-mel front end: 16 kHz, 25 ms window, 10 ms hop, 30 s input, ``n_mels`` bins."""
    from transformers import WhisperFeatureExtractor

    return WhisperFeatureExtractor(feature_size=n_mels, sampling_rate=16000, hop_length=160, chunk_length=30, n_fft=400)


def _source_record(model_bin: Path) -> dict[str, Any]:
    return {"converter_version": CONVERTER_VERSION, "model_bin_sha256": sha256_file(model_bin)}


def ensure_whisper_cache(model_dir: str | Path, cache_dir: str | Path) -> Path:
    """The converted HF folder of the CTranslate2 Whisper in ``model_dir``, built in ``cache_dir``
    on first use and reused while its ``clapcap_source.json`` matches the ``model.bin``'s hash.

    The folder is written beside its final place and renamed onto it, so an interrupted
    conversion never leaves a folder that looks finished.

    Returns:
        ``cache_dir``.
    """
    from transformers import WhisperTokenizerFast

    model_dir, cache_dir = Path(model_dir), Path(cache_dir)
    record = _source_record(model_dir / "model.bin")
    if record_matches(cache_dir, record, name=SOURCE_FILE):
        return cache_dir
    logger.info("converting the CTranslate2 Whisper to transformers (cache %s)", cache_dir)
    hf = convert_ct2_whisper(model_dir)
    with atomic_dir(cache_dir) as tmp:
        hf.save_pretrained(tmp)
        feature_extractor_for(hf.config.num_mel_bins).save_pretrained(tmp)
        WhisperTokenizerFast(tokenizer_file=str(model_dir / "tokenizer.json")).save_pretrained(tmp)
        write_json(tmp / SOURCE_FILE, record)
    return cache_dir
