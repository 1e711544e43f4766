"""Load the ``reference`` section of ``params.yaml`` and pick one reference by name."""

from __future__ import annotations

from pathlib import Path

from clapcap.config import DEFAULT_PARAMS, load_section
from clapcap.reference.config import ReferenceParams, ReferenceSpec


def load_reference_params(path: str | Path = DEFAULT_PARAMS) -> ReferenceParams:
    """Parse ``params.yaml`` section ``reference``.

    Raises:
        ConfigError: on a missing section, unknown key or wrong type.
    """
    return load_section(ReferenceParams, "reference", path)


def find_spec(params: ReferenceParams, name: str) -> ReferenceSpec:
    """The configured reference called ``name``.

    Raises:
        ValueError: naming the configured references when ``name`` is not one of them.
    """
    for spec in params.references:
        if spec.name == name:
            return spec
    raise ValueError(f"no reference named {name!r} in params; configured: {[s.name for s in params.references]}")
