"""Typed settings of one captioner and one run: :class:`CaptionerConfig` the architecture,
:class:`TrainConfig` one training run (its stages: :class:`StageConfig`), :class:`DecodingConfig`
one decoding configuration. The study's params (``params.yaml`` section ``captioning``) are
:mod:`clapcap.experiments.captioning.config`. Every class checks its values when built, so a
bad value fails at ``load_section``. This module imports no torch: a config loads, and is
checked, without it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass
class CaptionerConfig:
    """Architecture of one captioner.

    ``in_dim`` is 0 in ``params.yaml``: it is filled from the embedding dump. The LM is a small
    decoder trained here, or a pretrained one: ``pretrained`` names it by a Hugging Face hub id
    (``gpt2``, ``t5-base``, ``HuggingFaceTB/SmolLM2-135M``) at ``pretrained_revision`` (a branch,
    tag or commit; empty: ``main``), or by a local ``save_pretrained`` folder. A run resolves it
    once (:func:`clapcap.captioning.decoders.resolve_lm`: the hub cache, offline with
    ``HF_HUB_OFFLINE=1``) and its saved captioner names the snapshot's commit as its revision.
    ``pretrained_dir`` is the older field: a local folder only (a hub id there is refused,
    naming ``pretrained``); it still loads, so existing ``params.yaml`` files and saved
    captioners keep working. ``tokenizer`` ``auto`` means ``pretrained`` (the LM's own) with a
    pretrained LM, else ``bpe``. ``hidden``/``layers``/``heads`` size the small decoder and are
    ignored with a pretrained LM. ``causal`` is a pretrained decoder-only LM (``gpt2`` or
    SmolLM2); ``gpt2`` and ``t5`` take a pretrained LM too (a ``t5`` one is
    ``T5ForConditionalGeneration``, the prefix its encoder's input). ``lm_dtype`` is the LM's
    weight dtype (the projection stays float32; its output is cast to the LM's dtype).

    ``lora_rank`` > 0 wraps a pretrained LM in a PEFT LoRA adapter of that rank on
    ``lora_targets`` (scaled by ``lora_alpha / lora_rank``): stage 2 then trains the adapter
    and the projection, and the LM's own weights stay frozen. The adapter starts as the
    identity (PEFT initialises ``lora_B`` to zero), so stage 1 is the plain frozen-LM recipe.

    ``prefix_bos``: put the pretrained LM's begin-of-sequence token before the prefix, in
    training and generation alike, for an LM that was trained with every text starting so
    (Gemma 3: without ``<bos>`` its loss on "a dog barks twice" was 70.6 nats against 44.2,
    and a prefix fine-tune on 8 captions ended 20 steps at 3.38 against 2.39 with it; measured
    by benchmarks/pretrained_lm_cost.py, 2026-12-06). The prefix is otherwise where the LM
    expects its first token.
    """

    decoder: Literal["gpt2", "t5", "causal"] = "gpt2"
    pretrained: str = ""
    pretrained_revision: str = ""
    pretrained_dir: str = ""
    lm_dtype: Literal["float32", "bfloat16"] = "float32"
    hidden: int = 96
    layers: int = 2
    heads: int = 4
    prefix_length: int = 8
    projection_depth: int = 2
    projection_hidden: int = 0
    dropout: float = 0.1
    tokenizer: Literal["auto", "bpe", "unigram", "gpt2-bpe", "pretrained"] = "auto"
    vocab_size: int = 512
    max_caption_tokens: int = 40
    n_positions: int = 128
    in_dim: int = 0
    lora_rank: int = 0
    lora_alpha: float = 16.0
    lora_targets: list[str] = dataclasses.field(default_factory=lambda: ["q_proj", "v_proj"])
    prefix_bos: bool = False

    def __post_init__(self) -> None:
        if self.prefix_bos and (not self.lm_source() or self.decoder == "t5"):
            raise ValueError("prefix_bos: the begin-of-sequence token before the prefix is for a pretrained "
                             "decoder-only LM (decoder causal or gpt2 with pretrained set)")
        if self.pretrained and self.pretrained_dir:
            raise ValueError(f"set one of pretrained and pretrained_dir (its older name, a local folder), "
                             f"found both: {self.pretrained!r}, {self.pretrained_dir!r}")
        if self.pretrained_revision and not self.pretrained:
            raise ValueError(f"pretrained_revision {self.pretrained_revision!r} is for a hub id in pretrained"
                             + (", and pretrained_dir is a local folder" if self.pretrained_dir else ""))
        if self.lora_rank < 0 or self.lora_alpha <= 0:
            raise ValueError(f"lora_rank must be >= 0 and lora_alpha > 0, found {self.lora_rank}, {self.lora_alpha}")
        if self.lora_rank and not self.lm_source():
            raise ValueError("lora_rank: a LoRA adapter is for a pretrained LM (set pretrained); "
                             "a decoder trained from scratch fine-tunes all of its weights")
        if self.lora_rank and not self.lora_targets:
            raise ValueError("lora_targets: name at least one module of the LM (for example q_proj)")

    def lm_source(self) -> str:
        """The pretrained LM as written (``pretrained``, else ``pretrained_dir``); empty for a small decoder."""
        return self.pretrained or self.pretrained_dir

    def tokenizer_kind(self) -> str:
        """The concrete tokenizer kind ``auto`` resolves to."""
        if self.tokenizer != "auto":
            return self.tokenizer
        # Small decoders of both kinds use the trained byte-level BPE: on the synthetic corpus
        # the tokenizers Unigram trainer yields ~230 near-character pieces (2.2x longer sequences).
        return "pretrained" if self.lm_source() else "bpe"


@dataclass
class DecodingConfig:
    """One decoding configuration.

    ``strategy``: ``greedy``, ``beam`` (``num_beams``, ``length_penalty``) or ``sample``
    (nucleus sampling with ``top_p`` and ``temperature``, seeded by ``seed``).
    ``repetition_penalty`` 1.0 and ``no_repeat_ngram_size`` 0 disable those options.
    """

    strategy: Literal["greedy", "beam", "sample"] = "greedy"
    num_beams: int = 4
    length_penalty: float = 1.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    top_p: float = 0.9
    temperature: float = 1.0
    max_new_tokens: int = 40
    trim_sentences: bool = False
    trim_words: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raises ValueError naming the first out-of-range option (also when built)."""
        checks = [
            (self.strategy in ("greedy", "beam", "sample"), f"strategy {self.strategy!r}"),
            (self.num_beams >= 1, f"num_beams {self.num_beams} < 1"),
            (self.repetition_penalty > 0, f"repetition_penalty {self.repetition_penalty} <= 0"),
            (self.no_repeat_ngram_size >= 0, f"no_repeat_ngram_size {self.no_repeat_ngram_size} < 0"),
            (0.0 < self.top_p <= 1.0, f"top_p {self.top_p} outside (0, 1]"),
            (self.temperature > 0, f"temperature {self.temperature} <= 0"),
            (self.max_new_tokens >= 1, f"max_new_tokens {self.max_new_tokens} < 1"),
            (self.trim_words is None or self.trim_words >= 1, f"trim_words {self.trim_words} < 1"),
        ]
        for ok, what in checks:
            if not ok:
                raise ValueError(f"invalid decoding config: {what}")

    def generate_kwargs(self) -> dict[str, Any]:
        """The ``generate`` keyword arguments for this configuration."""
        kw: dict[str, Any] = {"max_new_tokens": self.max_new_tokens,
                              "repetition_penalty": self.repetition_penalty,
                              "no_repeat_ngram_size": self.no_repeat_ngram_size}
        if self.strategy == "greedy":
            kw.update(do_sample=False, num_beams=1)
        elif self.strategy == "beam":
            kw.update(do_sample=False, num_beams=self.num_beams, length_penalty=self.length_penalty,
                      early_stopping=True)
        else:
            kw.update(do_sample=True, num_beams=1, top_p=self.top_p, temperature=self.temperature,
                      top_k=0)
        return kw


@dataclass
class StageConfig:
    """Optimisation of one stage. ``lr_lm`` is used by stage 2 only."""

    epochs: int = 4
    lr_projection: float = 2e-3
    lr_lm: float = 3e-4
    weight_decay: float = 0.01


@dataclass
class TrainConfig:
    """A training run. ``lm_pretrain_epochs`` applies to small (non-pretrained) decoders only."""

    seed: int = 0
    batch_size: int = 64
    stages: list[int] = field(default_factory=lambda: [1, 2])
    stage1: StageConfig = field(default_factory=lambda: StageConfig(epochs=4, lr_projection=2e-3))
    stage2: StageConfig = field(default_factory=lambda: StageConfig(epochs=3, lr_projection=1e-3,
                                                                     lr_lm=3e-4))
    lm_pretrain_epochs: int = 3
    lm_pretrain_lr: float = 3e-3
    # None: each training seed warms its LM up with its own seed. An int: one warm-up, with
    # this seed, shared by every training seed, as one pretrained LM is shared (the seeds then
    # vary the captioning stages, not the caption LM).
    lm_pretrain_seed: int | None = None
    # 0: every caption of every clip in each epoch; k: k captions per clip, the next k in the
    # next epoch (a 135 M-parameter LM costs ~0.1 s per caption on a CPU core).
    captions_per_clip: int = 0
    # 0: every training clip. n: the same n clips for every run with this n, whatever its seed
    # (CaptionSplit.subset), so rows trained on a subset compare on the same clips.
    train_clips: int = 0
    grad_clip: float = 1.0
    embedding_key: str = "audio_embeds"
    device: str = "cpu"  # set from the `compute` section by train_captioner; not a params.yaml key
    torch_threads: int = 1  # tiny models: 1 intra-op thread is fastest, and safe on shared cores

    def __post_init__(self) -> None:
        self.validate()

    def record(self) -> dict[str, Any]:
        """The config as results record it: ``train_clips`` only when set, so runs on every
        clip keep the bytes they had before the option existed."""
        out = dataclasses.asdict(self)
        if not self.train_clips:
            del out["train_clips"]
        return out

    def validate(self) -> None:
        """Raises ValueError naming the first bad option (also at load, from ``__post_init__``)."""
        if not self.stages or any(s not in (1, 2) for s in self.stages) or sorted(set(self.stages)) != self.stages:
            raise ValueError(f"train.stages: expected [1], [2] or [1, 2], found {self.stages}")
        if self.batch_size < 1:
            raise ValueError(f"train.batch_size must be >= 1, found {self.batch_size}")
        if self.captions_per_clip < 0:
            raise ValueError(f"train.captions_per_clip must be >= 0 (0: all), found {self.captions_per_clip}")
        if self.train_clips < 0:
            raise ValueError(f"train.train_clips must be >= 0 (0: all), found {self.train_clips}")
        for name in ("stage1", "stage2"):
            st: StageConfig = getattr(self, name)
            if st.epochs < 1 or st.lr_projection <= 0 or st.lr_lm < 0:
                raise ValueError(f"train.{name}: need epochs >= 1 and positive learning rates, found {st}")
