"""Tiny CLAP checkpoints in the published architecture's layout, for offline tests.

:func:`build_published_clap` writes a ``save_pretrained`` folder like ``laion/clap-htsat-unfused``'s
(or ``-fused``'s): a ``ClapModel`` with an HTSAT audio tower and a RoBERTa text tower (tiny
sizes, random weights), a byte-level BPE ``RobertaTokenizer`` (the 256 byte symbols, no merges)
and a ``ClapFeatureExtractor`` at 48 kHz. :func:`put_in_hub_cache` places such a folder in a
Hugging Face cache in the hub's own layout (``models--ORG--NAME/refs/main``,
``snapshots/<commit>/``), so that huggingface_hub resolves the id offline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def _byte_symbols() -> list[str]:
    """GPT-2's printable stand-ins for the 256 bytes (byte-level BPE's base alphabet)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = [b for b in range(256) if b not in keep]
    return [chr(b) for b in keep] + [chr(256 + i) for i in range(len(extra))]


def build_published_clap(out: Path, *, fused: bool = False, seed: int = 0) -> Path:
    """Write a tiny published-layout CLAP folder to ``out``; returns ``out``."""
    import torch
    from transformers import (
        ClapAudioConfig,
        ClapConfig,
        ClapFeatureExtractor,
        ClapModel,
        ClapProcessor,
        ClapTextConfig,
        RobertaTokenizer,
    )

    out.mkdir(parents=True, exist_ok=True)
    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", *_byte_symbols(), "<mask>"])}
    (out / "vocab.json").write_text(json.dumps(vocab))
    (out / "merges.txt").write_text("#version: 0.2\n")
    tok = RobertaTokenizer(str(out / "vocab.json"), str(out / "merges.txt"), model_max_length=77)
    audio = ClapAudioConfig(spec_size=128, num_mel_bins=64, patch_size=4, patch_stride=[4, 4], window_size=4,
                            depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 4, 4], patch_embeds_hidden_size=16,
                            hidden_size=128, projection_dim=16, enable_fusion=fused)
    text = ClapTextConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=130, type_vocab_size=1, pad_token_id=1,
                          projection_dim=16)
    torch.manual_seed(seed)
    model = ClapModel(ClapConfig(text_config=text.to_dict(), audio_config=audio.to_dict(), projection_dim=16))
    fe = ClapFeatureExtractor(feature_size=64, sampling_rate=48000, max_length_s=1, frequency_min=50,
                              frequency_max=14000, truncation="fusion" if fused else "rand_trunc")
    model.save_pretrained(out)
    ClapProcessor(feature_extractor=fe, tokenizer=tok).save_pretrained(out)
    return out


def put_in_hub_cache(folder: Path, cache: Path, repo_id: str, commit: str, *, ref: str = "main") -> Path:
    """Copy ``folder`` into ``cache`` as ``repo_id`` at ``commit`` (``refs/<ref>`` points at it: a
    branch or tag); returns the snapshot folder."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    shutil.copytree(folder, snap)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / ref).write_text(commit)
    return snap
