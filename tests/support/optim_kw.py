"""The tests' shorthand for a CLAP family's params: the optimiser keys (``epochs``, ``lr``,
``seed``, ...) given flat and moved into the ``optim`` block, over the family's own defaults."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, TypeVar

from clapcap.clap.optim import OptimConfig

T = TypeVar("T")
OPTIM_KEYS = {f.name for f in fields(OptimConfig)}


def params_with(cls: type[T], **kw: Any) -> T:
    """``cls(**kw)`` with ``kw``'s optimiser keys set in ``cls``'s default ``optim``."""
    optim = {k: kw.pop(k) for k in list(kw) if k in OPTIM_KEYS}
    default = next(f for f in fields(cls) if f.name == "optim").default_factory()
    return cls(**kw, optim=replace(default, **optim))
