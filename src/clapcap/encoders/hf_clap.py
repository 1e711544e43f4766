"""The ``hf_clap`` backend: transformers ``ClapModel`` with deterministic preprocessing.

How the randomness of ``ClapFeatureExtractor`` is removed (see docs/encoders.md):

- **Unfused models** (``enable_fusion=False``): clips longer than the window
  (``feature_extractor.nb_max_samples``) are cut by :func:`crop_wave` *before* the
  extractor, which is then called with ``truncation="rand_trunc"``; its random crop only
  runs on longer clips, so it never runs. Shorter clips are repeat-padded (deterministic).
- **Fused models**: the extractor is called with ``truncation="fusion"`` one clip at a
  time under a fixed NumPy seed (``fusion_seed``; the global RNG state is restored), so
  the three random mel crops of a long clip depend on the clip only, not on the batch.
  ``is_longer`` is then recomputed as ``len(clip) > window``: the extractor otherwise
  flags a random short clip as "longer" when no clip in the batch is, which makes an
  embedding depend on its batch. This matches laion_clap's evaluation mode.
- ``mel_floor_db`` clamps the log-mel from below (the tiny default uses -50 dB).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from clapcap.clap.model import TinyClapConfig, build_tiny_clap, load_clap
from clapcap.clap.preprocessing import ClapPreprocessing, clap_features, tokenize
from clapcap.encoders.base import EncoderConfig, check_texts, check_waves
from clapcap.encoders.checkpoints import resolve_hf_checkpoint, tokenizer_label
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

# Text-tower outputs (pooled, float32, CPU) of this process: weights hash -> text -> row.
_TOWER_MEMO: dict[str, dict[str, Any]] = {}
_MEMO_LIMIT = 200_000


class HFClapEncoder:
    """transformers ``ClapModel`` as an :class:`~clapcap.encoders.base.AudioTextEncoder`."""

    pipeline = "hf_transformers"

    def __init__(self, model: Any, tokenizer: Any, feature_extractor: Any, prep: ClapPreprocessing,
                 *, checkpoint: str = "", batch_size: int = 16, device: str = "cpu"):
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.feature_extractor = feature_extractor
        self.prep = prep
        self.checkpoint = checkpoint
        self.batch_size = batch_size
        self.device = device
        self.sample_rate = int(feature_extractor.sampling_rate)
        self._text_key: str | None = None
        # What identifies the weights (hub commit or SHA-256), set by from_config.
        self.record: dict[str, Any] = {}
        if bool(model.config.audio_config.enable_fusion) != prep.fusion:
            raise ValueError(f"{checkpoint or '<model>'}: enable_fusion={prep.fusion} but the model config "
                             f"has enable_fusion={model.config.audio_config.enable_fusion}")

    @classmethod
    def from_config(cls, cfg: EncoderConfig) -> HFClapEncoder:
        """Load ``cfg.checkpoint`` (folder or hub id), or a random tiny model when it is empty."""

        resolved = None
        if cfg.checkpoint:
            resolved = resolve_hf_checkpoint(cfg.checkpoint, revision=cfg.revision)
            model, tok, fe, sidecar = load_clap(resolved.path)
        elif cfg.revision:
            raise InputError(f"revision {cfg.revision!r} given without a checkpoint")
        else:
            tiny = TinyClapConfig()
            model, tok, fe = build_tiny_clap(tiny, vocab=[], seed=cfg.tiny_seed)
            sidecar = {"mel_floor_db": tiny.mel_floor_db}
        floor = cfg.mel_floor_db if cfg.mel_floor_db is not None else sidecar.get("mel_floor_db")
        prep = ClapPreprocessing(fusion=cfg.enable_fusion, crop=cfg.crop, fusion_seed=cfg.fusion_seed,
                                 mel_floor_db=floor)
        enc = cls(model, tok, fe, prep, checkpoint=cfg.checkpoint or f"random-tiny-seed{cfg.tiny_seed}",
                  batch_size=cfg.batch_size, device=cfg.device)
        enc.record = resolved.record() if resolved else {"checkpoint": enc.checkpoint, "checkpoint_kind": "random"}
        return enc

    def embed_audio(self, waves: Sequence[np.ndarray]) -> np.ndarray:
        """(N, D) float32 audio embeddings (the model's projection output, L2-normalised by HF)."""
        import torch

        waves = check_waves(waves)
        out = []
        with torch.inference_mode():
            for i in range(0, len(waves), self.batch_size):
                feats, longer = clap_features(self.feature_extractor, waves[i:i + self.batch_size], self.prep)
                # Features in the audio tower's dtype, so a model cast to bf16 (make gpu-check) runs too.
                dtype = next(self.model.audio_model.parameters()).dtype
                emb = self.model.get_audio_features(input_features=feats.to(self.device, dtype=dtype),
                                                    is_longer=longer.to(self.device))
                out.append(emb.float().cpu().numpy())
        return np.concatenate(out).astype(np.float32)

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        """(N, D) float32 caption embeddings: ``ClapModel.get_text_features`` (the projection of
        the text tower's pooled output, L2-normalised), with the tower's outputs memoised.

        The tower runs once per distinct text in this process for every encoder whose text
        tower has the same weights (:data:`_TOWER_MEMO`, keyed by a hash of them): models
        fine-tuned with a frozen text tower (RobustCLAP, its control, their seeds) share it, so
        a benchmark of several runs the tower once. Texts go through the tower in batches of
        similar length (less padding), and the rows come back in the input order.
        """
        import torch

        texts = check_texts(texts)
        memo = _TOWER_MEMO.setdefault(self._tower_key(), {})
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        lengths = [len(ids) for ids in self.tokenizer(missing, truncation=True)["input_ids"]] if missing else []
        order = sorted(range(len(missing)), key=lambda i: (lengths[i], i))
        with torch.inference_mode():
            for i in range(0, len(order), self.batch_size):
                batch = [missing[j] for j in order[i:i + self.batch_size]]
                enc = tokenize(self.tokenizer, batch)
                pooled = self.model.text_model(**{k: v.to(self.device) for k, v in enc.items()}).pooler_output
                for text, row in zip(batch, pooled.float().cpu(), strict=True):
                    memo[text] = row
            pooled = torch.stack([memo[t] for t in texts]).to(self.device)
            proj = self.model.text_projection(pooled.to(next(self.model.text_projection.parameters()).dtype))
            emb = torch.nn.functional.normalize(proj, dim=-1)  # as ClapModel.get_text_features
        if len(memo) > _MEMO_LIMIT:  # a long-lived process (a served model) starts over
            memo.clear()
        return emb.float().cpu().numpy().astype(np.float32)

    def _tower_key(self) -> str:
        """Hash of the text tower's weights (computed once: the encoder's model is not trained)."""
        if self._text_key is None:
            import hashlib

            digest = hashlib.sha256()
            for name, tensor in sorted(self.model.text_model.state_dict().items()):
                digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
                digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
            self._text_key = digest.hexdigest()
        return self._text_key

    def describe(self) -> dict[str, Any]:
        fe = self.feature_extractor
        return {"pipeline": self.pipeline, "checkpoint": self.checkpoint,
                **{k: v for k, v in self.record.items() if k != "checkpoint"},
                "tokenizer": tokenizer_label(self.tokenizer),
                "preprocessing": {"sample_rate": self.sample_rate, "window_samples": int(fe.nb_max_samples),
                                  "truncation": "fusion" if self.prep.fusion else "rand_trunc",
                                  "padding": "repeatpad", "crop": self.prep.crop,
                                  "fusion_seed": self.prep.fusion_seed, "is_longer": "len > window",
                                  "mel_floor_db": self.prep.mel_floor_db,
                                  "frequency_min": fe.frequency_min, "frequency_max": fe.frequency_max}}


class _TextEmbedder:
    """``predict(list[str] | DataFrame) -> (N, D)`` for the registered MLflow pyfunc model."""

    def __init__(self, encoder: HFClapEncoder):
        self.encoder = encoder

    def predict(self, model_input: Any) -> np.ndarray:
        if hasattr(model_input, "columns"):  # pandas DataFrame: first column holds the texts
            model_input = model_input.iloc[:, 0].tolist()
        return self.encoder.embed_text([str(t) for t in model_input])


def pyfunc_loader(artifacts: dict[str, str]) -> _TextEmbedder:
    """MLflow loader (``clapcap.tracking.log_loader_pyfunc_model``): artifact ``clap_dir``."""
    return _TextEmbedder(HFClapEncoder.from_config(EncoderConfig(checkpoint=artifacts["clap_dir"])))
