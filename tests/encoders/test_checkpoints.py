"""Your checkpoint, resolved and checked before any model code runs (clapcap.encoders.checkpoints).

The hub tests use a Hugging Face cache in the hub's own layout
(``models--laion--clap-htsat-unfused/refs/main`` + ``snapshots/<commit>/``) holding a tiny
``ClapModel`` with the published key layout, resolved offline by huggingface_hub's own code.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from clapcap.cli import main
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.checkpoints import (
    is_stand_in,
    read_laion_checkpoint,
    resolve_hf_checkpoint,
    tokenizer_label,
)
from clapcap.encoders.hf_clap import HFClapEncoder
from clapcap.errors import InputError

COMMIT = "5a9c0ffee0ddba11ab1e5a9c0ffee0ddba11ab1e"
REPO = "laion/clap-htsat-unfused"


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory) -> Path:
    """A complete save_pretrained CLAP folder (model, tokenizer, preprocessor_config.json)."""
    from clapcap.clap.model import TinyClapConfig, build_tiny_clap, save_clap

    model, tok, fe = build_tiny_clap(TinyClapConfig(), vocab=["dog", "barks", "a"], seed=0)
    return save_clap(model, tok, fe, tmp_path_factory.mktemp("tiny") / "clap")


@pytest.fixture
def hub_cache(tiny_folder, tmp_path, monkeypatch) -> Path:
    """An offline hub cache with REPO at COMMIT (refs/main points at it)."""
    import huggingface_hub.constants as constants

    cache = tmp_path / "hub"
    repo = cache / ("models--" + REPO.replace("/", "--"))
    shutil.copytree(tiny_folder, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_hub_id_resolves_offline_to_its_snapshot_commit(hub_cache):
    got = resolve_hf_checkpoint(REPO)
    assert got.kind == "hub" and got.revision == COMMIT and got.path.name == COMMIT
    assert got.record() == {"checkpoint": REPO, "checkpoint_kind": "hub", "checkpoint_revision": COMMIT}
    assert resolve_hf_checkpoint(REPO, revision=COMMIT).path == got.path


def test_hub_dump_meta_records_the_revision(hub_cache):
    enc = HFClapEncoder.from_config(EncoderConfig(checkpoint=REPO))
    meta = enc.describe()
    assert meta["checkpoint"] == REPO and meta["checkpoint_revision"] == COMMIT
    assert enc.embed_text(["a dog barks"]).shape[0] == 1


def test_uncached_hub_id_offline_is_one_line_saying_how_to_cache(hub_cache):
    with pytest.raises(InputError, match=r"laion/clap-htsat-fused: not in the Hugging Face cache .*"
                                         r"hf download laion/clap-htsat-fused"):
        resolve_hf_checkpoint("laion/clap-htsat-fused")


def test_uncached_revision_offline_names_what_is_cached(hub_cache):
    with pytest.raises(InputError, match=r"@v9: this revision is not in the Hugging Face cache .*refs \['main'\]"):
        resolve_hf_checkpoint(REPO, revision="v9")


def test_save_pretrained_alone_says_what_is_missing_and_how_to_add_it(tiny_folder, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(tiny_folder / name, bare / name)
    with pytest.raises(InputError, match=r"not the tokenizer or preprocessor_config.json.*ClapProcessor"):
        resolve_hf_checkpoint(str(bare))


def test_folder_is_recorded_by_the_sha256_of_its_weights(tiny_folder):
    from clapcap.utils.io import sha256_file

    got = resolve_hf_checkpoint(str(tiny_folder))
    assert got.kind == "folder" and got.sha256 == sha256_file(tiny_folder / "model.safetensors")


def test_pt_file_given_to_hf_clap_points_at_laion_backend(tmp_path):
    pt = tmp_path / "630k-audioset-best.pt"
    pt.write_bytes(b"x")
    with pytest.raises(InputError, match="use --backend laion_clap"):
        resolve_hf_checkpoint(str(pt))
    with pytest.raises(InputError, match=r"missing.pt: no such file"):
        resolve_hf_checkpoint(str(tmp_path / "missing.pt"))


def test_mistyped_folder_is_not_taken_for_a_hub_id(tmp_path, monkeypatch):
    (tmp_path / "models" / "synth_clap").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"models/synth_clapp: no such folder \(models/ holds: synth_clap\)"):
        resolve_hf_checkpoint("models/synth_clapp")


def _laion_sd(fused: bool, position_ids: bool = True) -> dict:
    sd = {"module.audio_branch.patch_embed.proj.weight": torch.zeros(2),
          "module.text_branch.embeddings.word_embeddings.weight": torch.zeros(2)}
    if fused:
        sd["module.audio_branch.fusion_model.local_att.0.weight"] = torch.zeros(2)
    if position_ids:
        sd["module.text_branch.embeddings.position_ids"] = torch.arange(4)[None]
    return sd


def test_laion_checkpoint_errors_are_one_input_error(tmp_path):
    with pytest.raises(InputError, match="missing.pt: no such file"):
        read_laion_checkpoint(str(tmp_path / "missing.pt"), enable_fusion=False)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="junk.pt: not a torch checkpoint"):
        read_laion_checkpoint(str(junk), enable_fusion=False)
    other = tmp_path / "other.pt"
    torch.save({"state_dict": {"encoder.weight": torch.zeros(1)}}, other)
    with pytest.raises(InputError, match="other.pt: not a laion_clap checkpoint"):
        read_laion_checkpoint(str(other), enable_fusion=False)


@pytest.mark.parametrize("fused", [True, False])
def test_fused_checkpoint_loaded_as_unfused_or_the_reverse_says_which(tmp_path, fused):
    path = tmp_path / "ckpt.pt"
    torch.save({"state_dict": _laion_sd(fused)}, path)
    kind = "a fused checkpoint" if fused else "an unfused checkpoint"
    with pytest.raises(InputError, match=f"{kind} .*enable_fusion={not fused}"):
        read_laion_checkpoint(str(path), enable_fusion=not fused)
    sd, info = read_laion_checkpoint(str(path), enable_fusion=fused)
    assert info["fused"] is fused and not any(k.startswith("module.") for k in sd)


def test_checkpoint_saved_without_position_ids_reads(tmp_path):
    """laion_clap's own loader raises KeyError on it (it deletes the key unconditionally)."""
    path = tmp_path / "new.pt"
    torch.save({"state_dict": _laion_sd(False, position_ids=False)}, path)
    sd, _ = read_laion_checkpoint(str(path), enable_fusion=False)
    assert "text_branch.embeddings.position_ids" not in sd


def _bpe_tokenizer(folder: Path, the_id: int):
    """A byte-level BPE RoBERTa tokenizer whose " the" has id ``the_id``."""
    from transformers import RobertaTokenizer

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    words = ["\u0120the", "\u0120dog", "t", "h", "e", "\u0120", "\u0120t", "he"]
    vocab = {}
    for tok in specials + words:
        vocab[tok] = len(vocab)
    if the_id != vocab["\u0120the"]:
        vocab = {k: (the_id if k == "\u0120the" else v + (v >= the_id)) for k, v in vocab.items()}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n\u0120 t\nh e\n\u0120t he\n")
    return RobertaTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))


def test_stand_in_tokenizer_is_told_from_roberta_base(tmp_path):
    real, stand_in = _bpe_tokenizer(tmp_path / "real", 5), _bpe_tokenizer(tmp_path / "fake", 266)
    assert not is_stand_in(real) and is_stand_in(stand_in)
    assert tokenizer_label(real).endswith("(roberta-base ids)")
    assert "stand-in" in tokenizer_label(stand_in)


def test_converting_a_real_checkpoint_with_the_stand_in_tokenizer_is_refused(build_tiny_laion, tmp_path):
    from clapcap.encoders.convert import convert_laion_checkpoint

    _bpe_tokenizer(tmp_path / "stand_in", 266).save_pretrained(tmp_path / "stand_in")
    sd = {"module." + k: v for k, v in build_tiny_laion(seed=0).state_dict().items()}
    real, ours = tmp_path / "real.pt", tmp_path / "ours.pt"
    torch.save({"state_dict": sd}, real)
    torch.save({"state_dict": sd, "clapcap_tokenizer": "stand-in"}, ours)
    with pytest.raises(InputError, match="real.pt: a real laion_clap checkpoint, but tokenizer .* stand-in"):
        convert_laion_checkpoint(real, tmp_path / "hf_real", tokenizer=str(tmp_path / "stand_in"), spec_size=128)
    assert not (tmp_path / "hf_real").exists()
    out = convert_laion_checkpoint(ours, tmp_path / "hf_ours", tokenizer=str(tmp_path / "stand_in"), spec_size=128)
    assert (out / "config.json").is_file()


def test_long_caption_with_a_tokenizer_without_model_max_length_is_truncated(tiny_folder, tmp_path):
    """A tokenizer saved without model_max_length used to overrun the text tower's positions."""
    folder = tmp_path / "clap"
    shutil.copytree(tiny_folder, folder)
    cfg_path = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.pop("model_max_length", None)
    cfg_path.write_text(json.dumps(cfg))
    enc = HFClapEncoder.from_config(EncoderConfig(checkpoint=str(folder)))
    emb = enc.embed_text([" ".join(["a dog barks"] * 200)])
    assert emb.shape[0] == 1 and np.isfinite(emb).all()


def test_cli_missing_laion_checkpoint_is_one_line_before_laion_clap_loads(tiny_corpus, tmp_path, capsys):
    import sys

    before = "laion_clap" in sys.modules
    code = main(["retrieval", "embed", "--dataset", str(tiny_corpus), "--backend", "laion_clap",
                 "--checkpoint", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "d.npz")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"clapcap: error: {tmp_path / 'missing.pt'}: no such file"]
    assert ("laion_clap" in sys.modules) == before and not (tmp_path / "d.npz").exists()


def test_hub_snapshot_with_only_pytorch_model_bin_resolves(tiny_folder, tmp_path, monkeypatch):
    """laion/clap-htsat-unfused's main holds pytorch_model.bin and no safetensors."""
    import huggingface_hub.constants as constants
    from transformers import ClapModel

    cache = tmp_path / "hub"
    snap = cache / ("models--" + REPO.replace("/", "--")) / "snapshots" / COMMIT
    shutil.copytree(tiny_folder, snap)
    (snap / "model.safetensors").unlink()
    ClapModel.from_pretrained(tiny_folder).save_pretrained(snap, safe_serialization=False)
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text(COMMIT)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    got = resolve_hf_checkpoint(REPO)
    assert (got.path / "pytorch_model.bin").is_file() and got.revision == COMMIT


def test_checkpoint_records_follow_the_hub_commit_and_nothing_else(hub_cache, tmp_path):
    """The resolve_checkpoints stage's files: a new commit on main changes the hub encoder's record
    (DVC then reruns its dumps), a rerun on the same commit writes the same bytes."""
    from clapcap.encoders.checkpoints import write_checkpoint_records

    pt = tmp_path / "630k.pt"
    torch.save({"state_dict": _laion_sd(False)}, pt)
    encoders = {"published": EncoderConfig(name="published", checkpoint=REPO),
                "laion": EncoderConfig(name="laion", backend="laion_clap", checkpoint=str(pt)),
                "random_clap": EncoderConfig(name="random_clap", tiny_seed=1)}
    out = tmp_path / "records"
    (out).mkdir()
    (out / "gone.json").write_text("{}")
    records = write_checkpoint_records(encoders, list(encoders), out)
    assert records["published"]["checkpoint_revision"] == COMMIT
    assert records["random_clap"] == {"encoder": "random_clap", "backend": "hf_clap", "checkpoint_kind": "random",
                                      "tiny_seed": 1}
    assert len(records["laion"]["checkpoint_sha256"]) == 64 and not (out / "gone.json").exists()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    write_checkpoint_records(encoders, list(encoders), out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    repo = hub_cache / ("models--" + REPO.replace("/", "--"))
    new = "0" * 39 + "1"
    shutil.copytree(repo / "snapshots" / COMMIT, repo / "snapshots" / new)
    (repo / "refs" / "main").write_text(new)
    write_checkpoint_records(encoders, list(encoders), out)
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert [n for n in after if after[n] != before[n]] == ["published.json"]
    with pytest.raises(InputError, match=r"embed.build: \['nope'\] not in embed.encoders"):
        write_checkpoint_records(encoders, ["nope"], out)


def test_cli_convert_writes_a_folder_hf_clap_loads(build_tiny_laion, tmp_path, capsys):
    _bpe_tokenizer(tmp_path / "stand_in", 266).save_pretrained(tmp_path / "stand_in")
    sd = {"module." + k: v for k, v in build_tiny_laion(seed=0).state_dict().items()}
    torch.save({"state_dict": sd, "clapcap_tokenizer": "stand-in"}, tmp_path / "ours.pt")
    assert main(["retrieval", "convert", str(tmp_path / "ours.pt"), str(tmp_path / "hf"),
                 "--tokenizer", str(tmp_path / "stand_in"), "--spec-size", "128"]) == 0
    assert resolve_hf_checkpoint(str(tmp_path / "hf")).kind == "folder"
    assert main(["retrieval", "convert", str(tmp_path / "nope.pt"), str(tmp_path / "hf2")]) == 2
    assert "nope.pt" in capsys.readouterr().err and not (tmp_path / "hf2").exists()
