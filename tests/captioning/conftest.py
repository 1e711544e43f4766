"""Captioning tests: shared helpers on ``sys.path``; one torch thread (tiny models, and
oversubscribed threads are about 100x slower on busy shared cores)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # caption_fixtures


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
