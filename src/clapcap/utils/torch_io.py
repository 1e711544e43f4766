"""Atomic ``torch.save`` whose bytes depend on the content only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from clapcap.utils.io import atomic_path


def save_torch(obj: Any, path: str | Path) -> Path:
    """Atomically ``torch.save`` ``obj`` to ``path``.

    ``torch.save`` to a file *name* prefixes every record of its zip archive with that name,
    and the atomic write's temporary name is random, so two saves of the same tensors gave
    different bytes. Saving through a file object uses the constant prefix ``archive``.

    Returns:
        ``path``.
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        torch.save(obj, fh)
    return Path(path)
