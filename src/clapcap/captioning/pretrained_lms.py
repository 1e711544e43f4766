"""Params section ``pretrained_lms``: the pretrained decoders converted to plain Hugging Face
folders for a study (stage ``pretrained_lm@<name>``).

``convert`` maps a pretrained LM's name to the folder it is written to. SmolLM2-135M has a
stage of its own (``pretrained_smollm2``, every study uses it); this section lists the others,
each only in the studies whose rows train on it: the reduced study converts none, the full
study Gemma 3 270M (``studies/full.yaml``), a 1 GB float32 folder that costs about 100 s to
write on 2 cores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from clapcap.captioning.gemma3 import convert_gemma3
from clapcap.captioning.smollm2 import convert_smollm2

# The pretrained LMs this project can convert from an installed package (make setup).
CONVERTERS: dict[str, Callable[..., Path]] = {"smollm2": convert_smollm2, "gemma3": convert_gemma3}
KNOWN = tuple(CONVERTERS)


@dataclass
class PretrainedLMsParams:
    """Section ``pretrained_lms``: name (one of :data:`KNOWN`) -> output folder."""

    convert: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        stray = sorted(set(self.convert) - set(KNOWN))
        if stray:
            raise ValueError(f"convert: {stray} are not pretrained LMs this project converts; known: {list(KNOWN)}")
        empty = sorted(name for name, folder in self.convert.items() if not str(folder).strip())
        if empty:
            raise ValueError(f"convert: {empty} have no output folder")


def convert_pretrained(name: str, out_dir: str | Path) -> Path:
    """Stage ``pretrained_lm@<name>``: convert pretrained LM ``name`` to the folder ``out_dir``
    (skipped when it already holds that conversion).

    Raises:
        ValueError: for a name not in :data:`KNOWN`.
        MissingDependencyError: when its package (or the GGUF reader) is not installed.
    """
    if name not in CONVERTERS:
        raise ValueError(f"{name!r} is not a pretrained LM this project converts; known: {list(KNOWN)}")
    return CONVERTERS[name](out_dir)
