"""Count the texts a frozen-text lookup computes (clapcap.clap.frozen_text)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def counting_computes() -> Iterator[list[int]]:
    """Inside the block every lookup module records the number of texts of each compute."""
    from clapcap.clap import frozen_text

    calls: list[int] = []
    real = frozen_text._lookup_module

    def counting(*args):
        module = real(*args)
        compute = module._compute
        module._compute = lambda keys, device: (calls.append(len(keys)), compute(keys, device))
        return module

    frozen_text._lookup_module = counting
    try:
        yield calls
    finally:
        frozen_text._lookup_module = real
