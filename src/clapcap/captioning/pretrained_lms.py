"""Params section ``pretrained_lms``: the pretrained decoders converted to plain Hugging Face
folders for a study (stage ``pretrained_lm@<name>``).

``convert`` maps a pretrained LM's name to the folder it is written to. SmolLM2-135M has a
stage of its own (``pretrained_smollm2``, every study uses it); this section lists the others,
each only in the studies whose rows train on it: the reduced study converts none, the full
study Gemma 3 270M (``studies/full.yaml``), a 1 GB float32 folder that costs about 100 s to
write on 2 cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The pretrained LMs this project can convert from an installed package (make setup).
KNOWN = ("smollm2", "gemma3")


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
