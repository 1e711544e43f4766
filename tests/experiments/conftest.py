"""The studies' tests (src/clapcap/experiments): one torch thread, as for the model packages'
tests (tiny models; on a shared 2-core machine oversubscribed threads run ~50x slower)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from threads import one_torch_thread


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    with one_torch_thread():
        yield
