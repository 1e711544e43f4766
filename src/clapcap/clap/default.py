"""Train the CLAP that ``train_clap`` describes: the MiniLM-text-tower CLAP (the default) or the
tiny from-scratch one, chosen by ``text_tower``; the one entry the ``train_clap`` stage, the
CLI and the variants study (:class:`~clapcap.clap.minilm_train.ClapVariantStudy`) call."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from clapcap.clap.config import TrainClapParams
from clapcap.compute import Compute


def minilm_params(params: TrainClapParams) -> Any:
    """``params`` as :class:`~clapcap.clap.minilm_train.MiniLMClapParams` (``model`` is
    the audio tower; ``min_word_count`` has no meaning for a WordPiece tower)."""
    from clapcap.clap.minilm_train import MiniLMClapParams

    fields = set(MiniLMClapParams.__dataclass_fields__)
    values = {k: v for k, v in asdict(params).items() if k in fields}
    return MiniLMClapParams(**{**values, "audio": params.model})


def run_default_clap(params: TrainClapParams, *, variant: str = "", progress: bool = True,
                     compute: Compute | None = None) -> Any:
    """Train (and, with ``track``, log and register) the CLAP of ``params``.

    Returns:
        The :class:`~clapcap.clap.train.TrainClapResult`.
    """
    if params.text_tower == "minilm":
        from clapcap.clap.minilm_train import run_train_minilm_clap

        return run_train_minilm_clap(minilm_params(params), variant=variant, progress=progress, compute=compute)
    from clapcap.clap.train import run_train_clap

    return run_train_clap(params, variant=variant, progress=progress, compute=compute)
