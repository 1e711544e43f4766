"""Captions from a local Hugging Face audio-language model, through transformers' own classes.

The folder holds a ``config.json`` whose ``architectures[0]`` names a transformers class
(``Qwen2AudioForConditionalGeneration``, ...) and a processor with a chat template that
takes ``{"type": "audio"}`` entries and ``processor(text=..., audio=..., sampling_rate=...)``
(the Qwen2-Audio convention). Decoding is greedy (``do_sample=False``, one beam,
``repetition_penalty=1.0``); bf16 on CUDA, fp32 on CPU unless ``dtype`` says otherwise. The
device is the ``compute`` section's (``hf.device: auto``), or ``hf.device`` when set.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap.compute import Compute, ComputeParams, or_default, resolve
from clapcap.data.audio import load_audio
from clapcap.reference.config import GenerationConfig, HFLocalConfig

logger = logging.getLogger(__name__)


def _dtype_and_device(cfg: HFLocalConfig, compute: Compute | None) -> tuple[Any, str]:
    """The model's dtype and device: ``hf.device`` ``auto`` follows the ``compute`` section;
    an explicit one is checked the same way (CUDA must exist; ``CLAPCAP_DEVICE`` still wins)."""
    import torch

    if cfg.device == "auto":
        device = or_default(compute).device
    else:
        device = resolve(ComputeParams(device=cfg.device)).device
    name = cfg.dtype if cfg.dtype != "auto" else ("bfloat16" if device.startswith("cuda") else "float32")
    return getattr(torch, name), device


class HFLocalCaptioner:
    """Caption batches of clips with a local audio-language model."""

    def __init__(self, cfg: HFLocalConfig, gen: GenerationConfig, *, compute: Compute | None = None) -> None:
        """Load the model folder ``cfg.model_dir`` onto its device (see :func:`_dtype_and_device`).

        Raises:
            FileNotFoundError / ValueError: when the folder is not a transformers model.
            DeviceUnavailable: when CUDA is asked for and there is none.
        """
        import transformers
        from transformers import AutoConfig, AutoProcessor

        self.dtype, self.device = _dtype_and_device(cfg, compute)  # first: a missing CUDA fails at once
        folder = Path(cfg.model_dir)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{folder}: no config.json; hf.model_dir must be a local model folder")
        arch = (AutoConfig.from_pretrained(folder).architectures or [None])[0]
        model_cls = getattr(transformers, arch or "", None)
        if model_cls is None:
            raise ValueError(f"{folder}/config.json: architecture {arch!r} is not a transformers class")
        self.processor = AutoProcessor.from_pretrained(folder)
        self.processor.tokenizer.padding_side = "left"  # decoder-only batch generation
        self.model = model_cls.from_pretrained(folder, torch_dtype=self.dtype).to(self.device).eval()
        self.sampling_rate = int(self.processor.feature_extractor.sampling_rate)
        self.cfg, self.gen = cfg, gen
        logger.info("loaded %s from %s (%s on %s)", arch, folder, self.dtype, self.device)

    def _prompt(self, audio_path: str) -> str:
        content: list[dict[str, str]] = [{"type": "audio", "audio_url": audio_path}]
        if self.gen.prompt:
            content.append({"type": "text", "text": self.gen.prompt})
        conv: list[dict[str, Any]] = [{"role": "user", "content": content}]
        if self.cfg.system_prompt is not None:
            conv.insert(0, {"role": "system", "content": self.cfg.system_prompt})
        return self.processor.apply_chat_template(conv, add_generation_prompt=True, tokenize=False)

    def caption_batch(self, audio_paths: list[str]) -> list[str]:
        """Greedy captions for ``audio_paths``, in order."""
        import torch


        waves = [load_audio(p, self.sampling_rate)[0] for p in audio_paths]
        texts = [self._prompt(p) for p in audio_paths]
        inputs = self.processor(text=texts, audio=waves, sampling_rate=self.sampling_rate,
                                return_tensors="pt", padding=True).to(self.device)
        if "input_features" in inputs:
            inputs["input_features"] = inputs["input_features"].to(self.dtype)
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.gen.max_new_tokens, do_sample=False,
                                      num_beams=1, repetition_penalty=1.0)
        new_tokens = out[:, inputs["input_ids"].shape[1]:]  # (B, <= max_new_tokens)
        return [t.strip() for t in self.processor.batch_decode(new_tokens, skip_special_tokens=True)]
