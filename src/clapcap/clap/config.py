"""``params.yaml`` section ``train_clap`` (the embedded default CLAP), parsed with
:func:`clapcap.config.load_section`."""

from __future__ import annotations

from dataclasses import dataclass, field

from clapcap.clap.model import TinyClapConfig


@dataclass
class TrainClapParams:
    """Section ``train_clap``: train the tiny default CLAP on a dataset's train split."""

    dataset_dir: str = "data/corpus"
    out_dir: str = "models/default_clap"
    model: TinyClapConfig = field(default_factory=TinyClapConfig)
    epochs: int = 20
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50
    seed: int = 0
    min_word_count: int = 1
    eval_split: str = "val"
    collapse_alpha: float = 0.01  # permutation test vs chance (clapcap.clap.collapse); 0 = off
    caption_column: str = "captions"
    registered_model: str = "clapcap-default-clap"
    alias: str = "champion"
    track: bool = True
    torch_threads: int = 0  # 0 = torch's default; 1 is faster on a busy 2-core machine
