"""The ``train_clap`` section as the MiniLM CLAP's params (``text_tower: minilm``, the default).

The one entry that trains the CLAP ``train_clap`` describes, tiny or MiniLM, and tracks it is
:func:`clapcap.tracked.clap.run_synth_clap` (the ``train_clap`` stage, the CLI, the variants).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from clapcap.clap.config import TrainClapParams


def minilm_params(params: TrainClapParams) -> Any:
    """``params`` as :class:`~clapcap.clap.minilm_train.MiniLMClapParams` (``model`` is
    the audio tower; ``min_word_count`` has no meaning for a WordPiece tower)."""
    from clapcap.clap.minilm_train import MiniLMClapParams

    fields = set(MiniLMClapParams.__dataclass_fields__)
    values = {k: v for k, v in asdict(params).items() if k in fields}
    return MiniLMClapParams(**{**values, "audio": params.model})
