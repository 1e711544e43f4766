"""Local HF backend with a tiny random Qwen2-Audio built offline from configs.

The processor is transformers' own ``Qwen2AudioProcessor``: a ``WhisperFeatureExtractor``
(128 mel bins) and a byte-level ``Qwen2Tokenizer`` whose vocabulary is the 256 byte symbols
plus Qwen2-Audio's special tokens, so it builds with no download.
"""

from __future__ import annotations

import json

import pytest

from clapcap.evaluation.shared_split import read_split_json
from clapcap.reference.config import GenerationConfig, HFLocalConfig, ReferenceSpec
from clapcap.reference.generate import generate_reference
from clapcap.utils.io import read_json

SPECIAL = ["<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]


@pytest.fixture(scope="module")
def tiny_qwen2_audio(tmp_path_factory):
    import torch
    from transformers import (
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        Qwen2Tokenizer,
        WhisperFeatureExtractor,
    )
    from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode

    folder = tmp_path_factory.mktemp("tiny_qwen2_audio")
    symbols = list(bytes_to_unicode().values())
    (folder / "vocab.json").write_text(json.dumps({s: i for i, s in enumerate(symbols)}))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tok = Qwen2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    tok.add_special_tokens({"additional_special_tokens": SPECIAL})
    Qwen2AudioProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=128),
                        tokenizer=tok).save_pretrained(folder)
    cfg = Qwen2AudioConfig(
        audio_config={"model_type": "qwen2_audio_encoder", "num_mel_bins": 128, "encoder_layers": 1,
                      "encoder_attention_heads": 2, "encoder_ffn_dim": 32, "d_model": 16},
        text_config={"model_type": "qwen2", "vocab_size": len(tok), "hidden_size": 32,
                     "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "num_key_value_heads": 1, "max_position_embeddings": 2048},
        audio_token_index=tok.convert_tokens_to_ids("<|AUDIO|>"))
    torch.manual_seed(0)
    model = Qwen2AudioForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def three_clips(small_split, tmp_path_factory):
    """The first three clips of the split, to keep the 30 s Whisper windows few."""
    from clapcap.utils.io import write_json

    data = read_json(small_split[1])
    data["clips"] = data["clips"][:3]
    path = tmp_path_factory.mktemp("three") / "split.json"
    write_json(path, data)
    return path


def test_hf_local_generates_greedy_resumable(tmp_path, tiny_qwen2_audio, three_clips):
    from clapcap.reference.hf_local import HFLocalCaptioner

    gen = GenerationConfig(max_new_tokens=6, batch_size=2, prompt="Describe the audio.")
    cap = HFLocalCaptioner(HFLocalConfig(model_dir=str(tiny_qwen2_audio)), gen)
    seen_kwargs = {}
    original = cap.model.generate

    def spy(**kwargs):
        seen_kwargs.update({k: v for k, v in kwargs.items() if not hasattr(v, "shape")})
        out = original(**kwargs)
        seen_kwargs["new_tokens"] = out.shape[1] - kwargs["input_ids"].shape[1]
        return out

    cap.model.generate = spy
    spec = ReferenceSpec(name="qwen_tiny", backend="hf_local", generation=gen,
                         hf=HFLocalConfig(model_dir=str(tiny_qwen2_audio)))
    out = generate_reference(spec, three_clips, tmp_path, captioner=cap.caption_batch, progress=False)
    preds = read_json(out)
    split = read_split_json(three_clips)
    assert list(preds) == [c.clip_id for c in split.clips]
    assert all(isinstance(p, str) for p in preds.values())
    assert seen_kwargs["do_sample"] is False and seen_kwargs["num_beams"] == 1
    assert seen_kwargs["repetition_penalty"] == 1.0 and seen_kwargs["max_new_tokens"] == 6
    assert 1 <= seen_kwargs["new_tokens"] <= 6
    # Greedy decoding is deterministic.
    paths = [c.audio_path for c in split.clips[:2]]
    assert cap.caption_batch(paths) == cap.caption_batch(paths)


def test_hf_local_backend_from_spec(tmp_path, tiny_qwen2_audio, three_clips):
    spec = ReferenceSpec(name="qwen_tiny", backend="hf_local",
                         generation=GenerationConfig(max_new_tokens=3),
                         hf=HFLocalConfig(model_dir=str(tiny_qwen2_audio), dtype="float32"))
    out = generate_reference(spec, three_clips, tmp_path, progress=False)
    assert len(read_json(out)) == len(read_split_json(three_clips).clips)


def test_hf_local_rejects_non_model_folder(tmp_path):
    from clapcap.reference.hf_local import HFLocalCaptioner

    with pytest.raises(FileNotFoundError, match="no config.json"):
        HFLocalCaptioner(HFLocalConfig(model_dir=str(tmp_path)), GenerationConfig())


def _bf16_run(folder, split_json, device):
    from clapcap.reference.hf_local import HFLocalCaptioner

    cap = HFLocalCaptioner(HFLocalConfig(model_dir=str(folder), dtype="auto" if device == "cuda" else "bfloat16",
                                         device=device), GenerationConfig(max_new_tokens=4))
    import torch

    assert cap.dtype == torch.bfloat16 and next(cap.model.parameters()).dtype == torch.bfloat16
    clip = read_split_json(split_json).clips[0]
    return cap.caption_batch([clip.audio_path])


def test_hf_local_bf16_plumbing_on_cpu(tiny_qwen2_audio, three_clips):
    assert len(_bf16_run(tiny_qwen2_audio, three_clips, "cpu")) == 1


@pytest.mark.gpu
def test_hf_local_bf16_on_cuda(tiny_qwen2_audio, three_clips):
    assert len(_bf16_run(tiny_qwen2_audio, three_clips, "cuda")) == 1
