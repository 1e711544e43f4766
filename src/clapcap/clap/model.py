"""The synthetic CLAP: a tiny transformers ``ClapModel``, its word-level tokenizer,
feature extractor, and save/load in a folder that the ``hf_clap`` backend reads.

Recipe (measured in ENVIRONMENT.md): HTSAT audio tower with ``spec_size`` 128, 64 mel
bins, patch 4, window 4, depths [1,1,1,1], heads [1,2,4,4], patch hidden 16 (hidden 128);
a 2-layer RoBERTa-style text tower (hidden 64) over a word-level vocabulary; projection 64.
Log-mel frames are clamped at ``mel_floor_db`` (-50 dB) because zero padding yields
-100 dB frames that swamp the audio batch norm.

A saved folder holds ``config.json`` + ``model.safetensors`` (``save_pretrained``),
``tokenizer.json`` (+ config), ``preprocessor_config.json`` (``ClapFeatureExtractor``) and
``clapcap_encoder.json`` (preprocessing the feature extractor cannot express).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

SIDECAR = "clapcap_encoder.json"
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


@dataclass
class TinyClapConfig:
    """Architecture and preprocessing of the tiny CLAP (defaults = the measured recipe)."""

    sample_rate: int = 16000
    max_length_s: int = 10
    hop_length: int = 640  # 10 s at 16 kHz -> 251 frames <= 2 * spec_size
    fft_window_size: int = 1024
    frequency_min: float = 50.0
    frequency_max: float = 8000.0
    num_mel_bins: int = 64
    spec_size: int = 128
    patch_size: int = 4
    window_size: int = 4
    depths: list[int] = field(default_factory=lambda: [1, 1, 1, 1])
    num_attention_heads: list[int] = field(default_factory=lambda: [1, 2, 4, 4])
    patch_embeds_hidden_size: int = 16
    text_hidden_size: int = 64
    text_layers: int = 2
    text_heads: int = 2
    max_text_length: int = 32
    projection_dim: int = 64
    mel_floor_db: float = -50.0

    def validate(self) -> None:
        """Raises ValueError on the two known shape pitfalls of tiny HTSAT configs."""
        n = len(self.depths)
        if len(self.num_attention_heads) != n:
            raise ValueError(f"depths {self.depths} and num_attention_heads {self.num_attention_heads} differ in length")
        grid = self.spec_size // self.patch_size // 2 ** (n - 1)
        if grid < self.window_size:
            raise ValueError(f"last stage grid {grid} (spec_size/patch/2**(stages-1)) < window_size {self.window_size}")
        frames = self.sample_rate * self.max_length_s // self.hop_length + 1
        ratio = self.spec_size // self.num_mel_bins
        if frames > self.spec_size * ratio:
            raise ValueError(f"{frames} mel frames exceed spec_size*freq_ratio={self.spec_size * ratio}; raise hop_length")


def build_vocab(texts: Iterable[str], *, min_count: int = 1) -> list[str]:
    """Word-level vocabulary (lower-cased, punctuation split) of ``texts``, most frequent first."""
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.Whitespace()
    counts = Counter(w for t in texts for w, _ in pre.pre_tokenize_str(t.lower()))
    return [w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count]


def build_tokenizer(vocab: list[str], max_length: int = 32) -> Any:
    """A ``PreTrainedTokenizerFast`` with RoBERTa-style specials (<s>=0, <pad>=1, </s>=2, <unk>=3)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    ids = {tok: i for i, tok in enumerate(SPECIALS)}
    for w in vocab:
        ids.setdefault(w, len(ids))
    tok = Tokenizer(models.WordLevel(ids, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>",
                                                       special_tokens=[("<s>", 0), ("</s>", 2)])
    # ClapModel.forward rejects token_type_ids, so the tokenizer never produces them.
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", unk_token="<unk>", model_max_length=max_length,
                                   model_input_names=["input_ids", "attention_mask"])


def build_feature_extractor(cfg: TinyClapConfig) -> Any:
    """``ClapFeatureExtractor`` for the tiny model (unfused, repeat-pad, deterministic crop upstream)."""
    from transformers import ClapFeatureExtractor

    return ClapFeatureExtractor(feature_size=cfg.num_mel_bins, sampling_rate=cfg.sample_rate,
                                hop_length=cfg.hop_length, max_length_s=cfg.max_length_s,
                                fft_window_size=cfg.fft_window_size, frequency_min=cfg.frequency_min,
                                frequency_max=cfg.frequency_max, truncation="rand_trunc",
                                padding="repeatpad")


def build_clap_config(cfg: TinyClapConfig, vocab_size: int) -> Any:
    """The transformers ``ClapConfig`` of the tiny model."""
    from transformers import ClapConfig

    cfg.validate()
    hidden = cfg.patch_embeds_hidden_size * 2 ** (len(cfg.depths) - 1)
    audio = dict(spec_size=cfg.spec_size, num_mel_bins=cfg.num_mel_bins, patch_size=cfg.patch_size,
                 patch_stride=[cfg.patch_size, cfg.patch_size], window_size=cfg.window_size,
                 depths=list(cfg.depths), num_attention_heads=list(cfg.num_attention_heads),
                 patch_embeds_hidden_size=cfg.patch_embeds_hidden_size, hidden_size=hidden,
                 projection_dim=cfg.projection_dim, enable_fusion=False)
    text = dict(vocab_size=vocab_size, hidden_size=cfg.text_hidden_size,
                num_hidden_layers=cfg.text_layers, num_attention_heads=cfg.text_heads,
                intermediate_size=2 * cfg.text_hidden_size,
                max_position_embeddings=cfg.max_text_length + 2, projection_dim=cfg.projection_dim,
                layer_norm_eps=1e-5)
    return ClapConfig(text_config=text, audio_config=audio, projection_dim=cfg.projection_dim)


def build_tiny_clap(cfg: TinyClapConfig, vocab: list[str], *, seed: int = 0) -> tuple[Any, Any, Any]:
    """Randomly initialised tiny CLAP. Returns ``(ClapModel, tokenizer, feature_extractor)``."""
    import torch
    from transformers import ClapModel

    tokenizer = build_tokenizer(vocab, cfg.max_text_length)
    torch.manual_seed(seed)
    model = ClapModel(build_clap_config(cfg, vocab_size=len(tokenizer)))
    return model, tokenizer, build_feature_extractor(cfg)


def save_clap(model: Any, tokenizer: Any, feature_extractor: Any, out_dir: str | Path,
              *, preprocessing: dict[str, Any] | None = None) -> Path:
    """Save a CLAP folder loadable by the ``hf_clap`` backend. Returns ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    feature_extractor.save_pretrained(out_dir)
    write_json(out_dir / SIDECAR, dict(preprocessing or {}))
    return out_dir


def text_positions(text_config: Any) -> int:
    """How many tokens the text tower embeds: RoBERTa-style position ids start after the
    padding id, so ``max_position_embeddings - pad_token_id - 1`` (512 for roberta-base)."""
    return int(text_config.max_position_embeddings) - int(text_config.pad_token_id or 0) - 1


def fit_tokenizer_to_text_tower(tokenizer: Any, text_config: Any) -> None:
    """Cap ``tokenizer.model_max_length`` at the text tower's positions, so that a long caption is
    truncated rather than indexing past the position table. A tokenizer saved without
    ``model_max_length`` gets transformers' "very large" default, which would not truncate."""
    tokenizer.model_max_length = min(int(tokenizer.model_max_length), text_positions(text_config))


def load_clap(path: str | Path) -> tuple[Any, Any, Any, dict[str, Any]]:
    """Load a CLAP folder (or hub id when online).

    Returns:
        ``(ClapModel, tokenizer, ClapFeatureExtractor, sidecar dict)``; the sidecar is
        empty for folders not written by :func:`save_clap`.

    Raises:
        OSError: from transformers when the folder/hub id has no CLAP model.
    """
    from transformers import AutoTokenizer, ClapFeatureExtractor, ClapModel

    model = ClapModel.from_pretrained(str(path))
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    fit_tokenizer_to_text_tower(tokenizer, model.config.text_config)
    fe = ClapFeatureExtractor.from_pretrained(str(path))
    sidecar_path = Path(path) / SIDECAR
    sidecar = read_json(sidecar_path) if sidecar_path.is_file() else {}
    model.eval()
    return model, tokenizer, fe, sidecar


def tiny_preprocessing(cfg: TinyClapConfig) -> dict[str, Any]:
    """The sidecar content for a tiny model."""
    return {"mel_floor_db": cfg.mel_floor_db, "tiny_config": asdict(cfg)}
