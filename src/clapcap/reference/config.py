"""Typed settings of the reference captioners (``params.yaml`` section ``reference``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from clapcap.evaluation.leakage import LeakageParams
from clapcap.llm.config import EndpointConfig


@dataclass
class GenerationConfig:
    """Decoding: greedy, no repetition penalty, like the pipeline's captioners."""

    max_new_tokens: int = 128
    prompt: str = "Describe this audio in one or two sentences."  # "" = prompt-less captioner
    batch_size: int = 1


@dataclass
class HFLocalConfig:
    """A local Hugging Face audio-language model folder (config, weights, processor)."""

    model_dir: str = ""
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"  # auto: bf16 on CUDA, fp32 on CPU
    device: str = "auto"                                               # auto: the compute section's device
    system_prompt: str | None = None                                   # None: the template's default


@dataclass(kw_only=True)
class ApiConfig(EndpointConfig):
    """An OpenAI-compatible ``/chat/completions`` endpoint that accepts ``input_audio``
    (:class:`~clapcap.llm.config.EndpointConfig`: where, which key, retries), and how audio
    goes in. The key is never stored in this config nor logged.
    """

    base_url: str = ""
    model: str = ""
    timeout_s: float = 120.0
    backoff_s: float = 2.0
    audio_encoding: Literal["base64", "data_uri"] = "base64"  # DashScope wants a data URI
    stream: bool = False                                        # some omni models only stream


@dataclass
class ReferenceSpec:
    """One reference captioner: how to get its predictions and how to score them."""

    name: str
    backend: Literal["hf_local", "openai_api", "import"]
    hf: HFLocalConfig = field(default_factory=HFLocalConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    predictions_file: str = ""          # backend "import": a {clip_id: caption} JSON made elsewhere
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    held_out_name: str | None = None
    trim_words: int | None = None
    trim_sentences: bool = False


@dataclass
class ReferenceParams:
    """``params.yaml`` section ``reference``."""

    dataset_dir: str = "data/corpus"
    split: str = "test"
    split_dir: str = "outputs/reference_split"  # not inside out_dir: separate DVC outputs
    out_dir: str = "outputs/reference"
    metrics: list[str] | None = None
    leakage: LeakageParams = field(default_factory=LeakageParams)
    api_concurrency: int = 2
    task_retries: int = 2
    task_retry_delay_s: float = 10.0
    references: list[ReferenceSpec] = field(default_factory=list)


def find_spec(params: ReferenceParams, name: str) -> ReferenceSpec:
    """The configured reference called ``name``.

    Raises:
        ValueError: naming the configured references when ``name`` is not one of them.
    """
    for spec in params.references:
        if spec.name == name:
            return spec
    raise ValueError(f"no reference named {name!r} in params; configured: {[s.name for s in params.references]}")
