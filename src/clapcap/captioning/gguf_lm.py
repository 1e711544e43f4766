"""A pretrained decoder-only LM shipped as one GGUF file, written once as a plain Hugging Face folder.

transformers loads a GGUF file with ``gguf_file=`` and de-quantises every tensor to float32
(tens of seconds for a 100 M-parameter model on 2 cores), and a GGUF-loaded model refuses
``save_pretrained``; so :func:`save_gguf_lm` copies its state dict into a fresh model of the
same class and config and saves that, with a tokenizer and a ``clapcap_source.json`` record
of what it was built from. Later loads are ordinary ``from_pretrained(folder)`` calls.
:mod:`clapcap.captioning.smollm2` and :mod:`clapcap.captioning.gemma3` use it; each checks
its record (``record_matches``) before calling it and logs the result itself.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clapcap.errors import MissingDependencyError
from clapcap.utils.io import atomic_dir, write_json

SOURCE = "clapcap_source.json"


def require_gguf() -> None:
    """Check that the ``gguf`` reader transformers needs is installed (without importing it).

    Raises:
        MissingDependencyError: naming ``make setup``.
    """
    if importlib.util.find_spec("gguf") is None:
        raise MissingDependencyError("reading a GGUF file needs the PyPI package gguf: run `make setup` "
                                     "(or: pip install gguf)", name="gguf")


def save_gguf_lm(src: Path, out: Path, record: dict[str, Any],
                 tokenizer: Callable[[Path, Any], Any]) -> tuple[Any, Any]:
    """Write the LM of the GGUF file ``src`` as a float32 ``save_pretrained`` folder at ``out``.

    ``tokenizer(src, model)`` gives the tokenizer to save beside the model (it may check it
    against ``model.config``). The folder is written next to ``out`` and renamed into place,
    with ``record`` as ``clapcap_source.json``, so a crash leaves no half-written model.

    Returns:
        ``(model, tokenizer)`` as saved.

    Raises:
        MissingDependencyError: when ``gguf`` is missing.
        ValueError: as ``tokenizer`` raises it.
    """
    require_gguf()
    import torch
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)
    tok = tokenizer(src, loaded)
    plain = type(loaded)(loaded.config)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    with atomic_dir(out) as tmp:  # written beside, renamed into place
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        write_json(tmp / SOURCE, record)
    return plain, tok
