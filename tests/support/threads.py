"""One intra-op torch thread, restored afterwards: tiny models on a shared 2-core machine run
far slower with contending threads, and runs compared bit for bit need the same count."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Set torch to one intra-op thread for the ``with`` block."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
