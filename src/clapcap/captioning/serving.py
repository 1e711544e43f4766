"""Serving a saved captioner (used by the MLflow pyfunc): audio or embeddings in, captions out.

A :class:`CaptionerService` holds a captioner, its decoding configuration and, optionally,
the frozen audio encoder whose embeddings it was trained on. Accepted inputs:

- **audio** (needs the encoder): a path or a list of paths to audio files (any format
  :func:`clapcap.data.audio.load_audio` reads; resampled to the encoder's rate), a pandas
  DataFrame with an ``audio_path`` column, or a one-column DataFrame/Series of paths
  (MLflow turns a list of strings into one); :meth:`CaptionerService.caption_waves` takes
  mono waveforms at the encoder's sample rate;
- **embeddings**: a (B, D) or (B, T, D) numpy array or tensor, a list of embedding rows, or
  a DataFrame whose column ``embedding`` holds one vector per row (or whose numeric
  columns form the rows).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clapcap.captioning.config import DecodingConfig
from clapcap.captioning.generation import generate_captions
from clapcap.captioning.model import load_captioner
from clapcap.compute import Compute, or_default, resolve
from clapcap.config import from_dict
from clapcap.data.audio import load_audio
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.factory import create_encoder


class CaptionerService:
    """A loaded captioner plus its decoding configuration and (optionally) its audio encoder."""

    def __init__(self, folder: str | Path, decoding: DecodingConfig | None = None, encoder: Any = None,
                 *, compute: Compute | None = None, lm_dir: str | Path | None = None) -> None:
        self.model = load_captioner(folder, device=or_default(compute).device, lm_dir=lm_dir)
        self.decoding = decoding or DecodingConfig()
        self.encoder = encoder

    def predict(self, model_input: Any) -> list[str]:
        """Captions for each audio file or embedding row of ``model_input`` (see module docstring).

        Raises:
            TypeError / ValueError: on an unsupported input type or shape, or audio input to a
                service without an encoder.
            clapcap.data.audio.AudioError: naming an audio file that cannot be read.
        """
        paths = audio_paths(model_input)
        if paths is not None:
            return self.caption_files(paths)
        return generate_captions(self.model, to_array(model_input), self.decoding)

    def caption_files(self, paths: Sequence[str | Path]) -> list[str]:
        """Load, encode and caption audio files, in order."""

        encoder = self._require_encoder()
        return self.caption_waves([load_audio(p, encoder.sample_rate)[0] for p in paths])

    def caption_waves(self, waves: Sequence[np.ndarray]) -> list[str]:
        """Caption mono waveforms sampled at the encoder's rate.

        Raises:
            ValueError: when the encoder's embedding size differs from the captioner's input size.
        """
        embeds = np.asarray(self._require_encoder().embed_audio(list(waves)), dtype=np.float32)
        if embeds.shape[-1] != self.model.cfg.in_dim:
            raise ValueError(f"the audio encoder gives {embeds.shape[-1]}-dim embeddings but the captioner "
                             f"expects {self.model.cfg.in_dim}")
        return generate_captions(self.model, embeds, self.decoding)

    def _require_encoder(self) -> Any:
        if self.encoder is None:
            raise ValueError("this captioner was saved without its audio encoder: pass embeddings, not audio")
        return self.encoder


def audio_paths(model_input: Any) -> list[str] | None:
    """The audio paths in ``model_input``, or None when it is not audio-path input.

    Raises:
        ValueError: on an empty list of paths.
    """
    values: Any = None
    if isinstance(model_input, str | Path):
        values = [model_input]
    elif isinstance(model_input, pd.DataFrame):
        if "audio_path" in model_input.columns:
            values = list(model_input["audio_path"])
        elif model_input.shape[1] == 1:
            values = list(model_input.iloc[:, 0])
    elif isinstance(model_input, pd.Series):
        values = list(model_input)
    elif isinstance(model_input, list | tuple) and model_input:
        values = list(model_input)
    if values is None or not all(isinstance(v, str | Path) for v in values):
        return None
    if not values:
        raise ValueError("no audio paths given")
    return [str(v) for v in values]


def to_array(model_input: Any) -> Any:
    """Convert a supported embedding input to a float32 array (tensors pass through)."""
    if isinstance(model_input, pd.DataFrame):
        if "embedding" in model_input.columns:
            return np.stack([np.asarray(v, dtype=np.float32) for v in model_input["embedding"]])
        return model_input.to_numpy(dtype=np.float32)
    if isinstance(model_input, list):
        return np.asarray(model_input, dtype=np.float32)
    return model_input


def load_for_pyfunc(artifacts: dict[str, str]) -> CaptionerService:
    """Build the service from MLflow artifacts.

    ``captioner`` (folder, required), ``decoding`` (JSON), ``encoder_config`` (JSON of an
    :class:`~clapcap.encoders.base.EncoderConfig`), ``encoder`` (the encoder's checkpoint,
    which replaces the config's ``checkpoint``) and ``lm`` (the pretrained LM folder of a
    captioner whose weights leave out its never-trained LM).

    Raises:
        KeyError: when the ``captioner`` artifact is missing.
    """
    compute = resolve()  # a served model has no params.yaml: auto, or CLAPCAP_DEVICE
    decoding = None
    if "decoding" in artifacts:
        decoding = from_dict(DecodingConfig, json.loads(Path(artifacts["decoding"]).read_text()))
    encoder = None
    if "encoder_config" in artifacts:

        recorded = json.loads(Path(artifacts["encoder_config"]).read_text())
        recorded.pop("device", None)  # where the dump was made; this process uses its own device
        cfg = from_dict(EncoderConfig, recorded).with_device(compute.device)
        if "encoder" in artifacts:
            cfg.checkpoint = artifacts["encoder"]
        encoder = create_encoder(cfg)
    return CaptionerService(artifacts["captioner"], decoding, encoder, compute=compute, lm_dir=artifacts.get("lm"))
