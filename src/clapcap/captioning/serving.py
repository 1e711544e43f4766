"""Serving a saved captioner: audio embeddings in, captions out (used by the MLflow pyfunc).

Accepted inputs: a (B, D) or (B, T, D) numpy array or tensor, a list of embedding rows,
or a pandas DataFrame whose column ``embedding`` holds one vector per row (or whose
numeric columns form the rows).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.captioning.generation import DecodingConfig, generate_captions
from clapcap.captioning.model import load_captioner
from clapcap.config import from_dict


class CaptionerService:
    """A loaded captioner plus its decoding configuration."""

    def __init__(self, folder: str | Path, decoding: DecodingConfig | None = None) -> None:
        self.model = load_captioner(folder)
        self.decoding = decoding or DecodingConfig()

    def predict(self, model_input: Any) -> list[str]:
        """Captions for each embedding row of ``model_input`` (see module docstring).

        Raises:
            TypeError / ValueError: on an unsupported input type or shape.
        """
        return generate_captions(self.model, to_array(model_input), self.decoding)


def to_array(model_input: Any) -> Any:
    """Convert a supported input to a float32 array (tensors pass through)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a core dependency
        pd = None
    if pd is not None and isinstance(model_input, pd.DataFrame):
        if "embedding" in model_input.columns:
            return np.stack([np.asarray(v, dtype=np.float32) for v in model_input["embedding"]])
        return model_input.to_numpy(dtype=np.float32)
    if isinstance(model_input, list):
        return np.asarray(model_input, dtype=np.float32)
    return model_input


def load_for_pyfunc(artifacts: dict[str, str]) -> CaptionerService:
    """Build the service from MLflow artifacts ``captioner`` (folder) and ``decoding`` (JSON).

    Raises:
        KeyError: when the ``captioner`` artifact is missing.
    """
    decoding = None
    if "decoding" in artifacts:
        decoding = from_dict(DecodingConfig, json.loads(Path(artifacts["decoding"]).read_text()))
    return CaptionerService(artifacts["captioner"], decoding)
