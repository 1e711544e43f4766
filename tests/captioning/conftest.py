"""Captioning tests: one torch thread (tiny models, and oversubscribed threads are about 100x
slower on busy shared cores). Shared helpers live in tests/support/caption_fixtures.py."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
