"""The prefix captioner (ClipCap for audio): module, factory and save/load.

:class:`~clapcap.captioning.config.CaptionerConfig` describes the architecture;
:func:`create_captioner` builds it.
A saved captioner is a folder::

    captioner.json   the CaptionerConfig (with ``in_dim`` filled in)
    weights.pt       the module's state dict; without the LM's tensors when the LM is a
                     pretrained one that was never trained (stage 1 of a pretrained decoder,
                     or stage 2 of one that trains a LoRA adapter): it is then loaded from
                     ``pretrained`` (a hub id at the commit the run resolved, or a folder) or
                     ``pretrained_dir`` (a 135 M-parameter LM would otherwise be copied into
                     every checkpoint), and only the adapter's tensors are saved
    tokenizer/       the tokenizer (``save_pretrained``)
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import torch
from torch import nn

from clapcap.captioning.config import CaptionerConfig
from clapcap.captioning.decoders import build_decoder, lm_hidden_size, resolve_lm
from clapcap.captioning.projection import PrefixProjection
from clapcap.captioning.tokenizer import encode_captions, load_pretrained_tokenizer
from clapcap.config import from_dict
from clapcap.utils.hub import ResolvedCheckpoint
from clapcap.utils.io import atomic_path
from clapcap.utils.torch_io import save_torch

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100


def is_lm_key(name: str) -> bool:
    """Whether a state-dict key belongs to the language model (``ClipCapCaptioner.lm``)."""
    return name.startswith("lm.")


def is_base_lm_key(name: str) -> bool:
    """Whether a state-dict key is one of the LM's own weights: an LM key that is not part of
    a LoRA adapter (PEFT names the adapter's tensors ``...lora_A.<adapter>.weight`` and
    ``...lora_B.<adapter>.weight``)."""
    return is_lm_key(name) and ".lora_" not in name


class ClipCapCaptioner(nn.Module):
    """Projection + decoder LM. ``tokenizer`` is kept as a plain attribute."""

    def __init__(self, cfg: CaptionerConfig, lm: nn.Module, tokenizer: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.lm = lm
        self.tokenizer = tokenizer
        self.projection = PrefixProjection(cfg.in_dim, lm_hidden_size(lm), cfg.prefix_length,
                                           depth=cfg.projection_depth, hidden=cfg.projection_hidden,
                                           dropout=cfg.dropout)
        # False while a pretrained LM holds exactly its pretrained weights (see save()); a
        # LoRA adapter trains beside them, so it stays False then.
        self.lm_trained = not cfg.lm_source()
        self.bos_token_id = getattr(tokenizer, "bos_token_id", None)
        if cfg.prefix_bos and self.bos_token_id is None:
            raise ValueError("prefix_bos: the LM's tokenizer has no begin-of-sequence token (bos_token_id)")

    @property
    def is_encoder_decoder(self) -> bool:
        return self.cfg.decoder == "t5"

    def prefix(self, embeds: torch.Tensor) -> torch.Tensor:
        """Audio embeddings (B, D_in) to the LM prefix (B, P, H); (B, 1 + P, H) with
        ``prefix_bos``, the LM's ``<bos>`` embedding first."""
        if embeds.ndim != 2 or embeds.shape[1] != self.cfg.in_dim:
            raise ValueError(f"expected audio embeddings of shape (B, {self.cfg.in_dim}), "
                             f"found {tuple(embeds.shape)}")
        prefix = self.projection(embeds.to(self.projection.mlp[0].weight.dtype))
        table = self.lm.get_input_embeddings()
        prefix = prefix.to(table.weight.dtype)
        if self.cfg.prefix_bos:  # the LM's own <bos> embedding first: (B, 1 + P, H)
            ids = torch.full((prefix.shape[0], 1), self.bos_token_id, dtype=torch.long, device=prefix.device)
            prefix = torch.cat([table(ids).to(prefix.dtype), prefix], dim=1)
        return prefix

    def set_lm_trainable(self, trainable: bool) -> None:
        """Freeze (stage 1) or unfreeze (stage 2) the language model: all of it, or only its
        LoRA adapter when it has one."""
        adapter = {id(p) for p in self.lm_parameters()}
        for p in self.lm.parameters():
            p.requires_grad_(trainable and id(p) in adapter)
        self.lm_trained = self.lm_trained or (trainable and not self.cfg.lora_rank)

    def lm_parameters(self) -> list[nn.Parameter]:
        """The LM's parameters that stage 2 trains: every one, or the LoRA adapter's."""
        return [p for name, p in self.lm.named_parameters()
                if not self.cfg.lora_rank or ".lora_" in f".{name}"]

    def weights(self) -> dict[str, torch.Tensor]:
        """The state dict a checkpoint holds: everything, or all but the LM's own weights
        while they are an untrained pretrained LM's (reloaded from its source; a LoRA
        adapter's tensors are kept)."""
        state = self.state_dict()
        if self.lm_trained:
            return state
        return {k: v for k, v in state.items() if not is_base_lm_key(k)}

    def load_weights(self, state: dict[str, torch.Tensor]) -> None:
        """Load :meth:`weights` (full, or without the LM's tensors for a pretrained LM).

        Raises:
            RuntimeError: on missing tensors other than a pretrained LM's, or unexpected ones.
        """
        has_lm = any(map(is_base_lm_key, state))
        if not has_lm and not self.cfg.lm_source():
            raise RuntimeError("checkpoint has no LM weights, and this captioner's LM is not pretrained")
        if has_lm:
            self.load_state_dict(state)
            self.lm_trained = True
            return
        result = self.load_state_dict(state, strict=False)
        missing = [k for k in result.missing_keys if not is_base_lm_key(k)]
        if missing or result.unexpected_keys:
            raise RuntimeError(f"checkpoint does not match the captioner: missing {missing}, "
                               f"unexpected {result.unexpected_keys}")

    def forward(self, embeds: torch.Tensor, input_ids: torch.Tensor,
                attention_mask: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over caption tokens only (prefix and padding ignored).

        Shapes: ``embeds`` (B, D_in), ``input_ids`` and ``attention_mask`` (B, L).
        """
        prefix = self.prefix(embeds)  # (B, P, H)
        labels = input_ids.masked_fill(attention_mask == 0, IGNORE_INDEX)
        prefix_mask = torch.ones(prefix.shape[:2], dtype=attention_mask.dtype, device=prefix.device)
        if self.is_encoder_decoder:
            return self.lm(inputs_embeds=prefix, attention_mask=prefix_mask, labels=labels).loss
        tokens = self.lm.get_input_embeddings()(input_ids)  # (B, L, H)
        inputs = torch.cat([prefix, tokens], dim=1)  # (B, P + L, H)
        mask = torch.cat([prefix_mask, attention_mask], dim=1)
        ignore = torch.full(prefix.shape[:2], IGNORE_INDEX, dtype=labels.dtype, device=labels.device)
        return self.lm(inputs_embeds=inputs, attention_mask=mask,
                       labels=torch.cat([ignore, labels], dim=1)).loss

    def loss_on_captions(self, embeds: torch.Tensor, captions: list[str]) -> torch.Tensor:
        """Tokenize ``captions`` and return :meth:`forward`'s loss."""
        ids, mask = encode_captions(self.tokenizer, captions, self.cfg.max_caption_tokens)
        device = self.projection.mlp[0].weight.device
        return self(embeds.to(device), ids.to(device), mask.to(device))

    def save(self, folder: str | Path) -> Path:
        """Write config, weights and tokenizer to ``folder`` (weights atomically). Returns it."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save_pretrained(str(folder / "tokenizer"))
        save_torch(self.weights(), folder / "weights.pt")
        with atomic_path(folder / "captioner.json") as tmp:
            tmp.write_text(json.dumps(dataclasses.asdict(self.cfg), indent=2, allow_nan=False))
        return folder


def create_captioner(cfg: CaptionerConfig, tokenizer: Any, *, lm: ResolvedCheckpoint | None = None,
                     ) -> ClipCapCaptioner:
    """Build a captioner from ``cfg`` for ``tokenizer``.

    ``lm`` is ``cfg``'s pretrained LM already resolved (:func:`resolve_lm`, by a training run);
    without it a pretrained LM is resolved here (its folder not hashed).

    Returns:
        A :class:`ClipCapCaptioner` (random projection; decoder random or pretrained).

    Raises:
        ValueError: when ``in_dim`` is unset, or prefix plus caption exceed ``n_positions``.
        InputError / FileNotFoundError: as :func:`resolve_lm`.
    """
    if cfg.in_dim < 1:
        raise ValueError("CaptionerConfig.in_dim must be set from the embedding dump (found 0)")
    if cfg.decoder == "gpt2" and cfg.prefix_length + 2 * cfg.max_caption_tokens > cfg.n_positions:
        raise ValueError(f"prefix_length {cfg.prefix_length} + 2 x max_caption_tokens "
                         f"{cfg.max_caption_tokens} exceeds n_positions {cfg.n_positions}")
    source = lm if lm is not None else resolve_lm(cfg, hash_folder=False)
    decoder = build_decoder(cfg.decoder, tokenizer, pretrained_dir=str(source.path) if source else "",
                            hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads, n_positions=cfg.n_positions,
                            dtype=cfg.lm_dtype)
    if cfg.lora_rank:
        with torch.random.fork_rng(devices=[]):  # the projection's initialisation as without one
            decoder = _with_lora(decoder, cfg)
    return ClipCapCaptioner(cfg, decoder, tokenizer)


def _with_lora(lm: nn.Module, cfg: CaptionerConfig) -> nn.Module:
    """``lm`` wrapped in a PEFT LoRA adapter (``lora_B`` zero: the wrapped LM computes what
    ``lm`` did). The adapter's tensors are float32 whatever ``lm_dtype`` is (PEFT's default)."""
    from peft import LoraConfig, get_peft_model

    names = {name.rsplit(".", 1)[-1] for name, _ in lm.named_modules()}
    unknown = sorted(set(cfg.lora_targets) - names)
    if unknown:
        raise ValueError(f"lora_targets: the LM has no module named {unknown}")
    peft_cfg = LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha, lora_dropout=0.0,
                          target_modules=list(cfg.lora_targets), bias="none",
                          task_type="SEQ_2_SEQ_LM" if cfg.decoder == "t5" else "CAUSAL_LM")
    return get_peft_model(lm, peft_cfg)


def load_captioner(folder: str | Path, *, device: str = "cpu", lm_dir: str | Path | None = None) -> ClipCapCaptioner:
    """Load a captioner saved by :meth:`ClipCapCaptioner.save`, in eval mode.

    ``lm_dir`` replaces the recorded pretrained LM (a served model carries its LM folder as an
    artifact of its own). A hub LM is loaded at the commit the run resolved (its saved
    ``pretrained_revision``).

    Raises:
        FileNotFoundError: when ``folder`` lacks ``captioner.json`` or ``weights.pt``, or
            the pretrained LM folder is missing.
        InputError: a hub LM whose snapshot is not cached while ``HF_HUB_OFFLINE`` is set.
    """

    folder = Path(folder)
    for name in ("captioner.json", "weights.pt"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder}: not a saved captioner ({name} missing)")
    cfg = from_dict(CaptionerConfig, json.loads((folder / "captioner.json").read_text()))
    if lm_dir is not None:
        cfg = dataclasses.replace(cfg, pretrained="", pretrained_revision="", pretrained_dir=str(lm_dir))
    tokenizer = load_pretrained_tokenizer(folder / "tokenizer")
    # A pretrained decoder is built from its folder; weights.pt then replaces what was trained.
    model = create_captioner(cfg, tokenizer)
    model.load_weights(torch.load(folder / "weights.pt", map_location=device, weights_only=True))
    return model.to(device).eval()


def frozen_lm_dir(checkpoint: str | Path) -> str | None:
    """The pretrained LM folder a saved captioner needs beside its weights (its LM was never
    trained, so ``weights.pt`` leaves it out; a hub LM's snapshot folder), or None when the
    weights are complete."""
    cfg = from_dict(CaptionerConfig, json.loads((Path(checkpoint) / "captioner.json").read_text()))
    if not cfg.lm_source():
        return None
    state = torch.load(Path(checkpoint) / "weights.pt", map_location="cpu", weights_only=True, mmap=True)
    if any(map(is_base_lm_key, state)):
        return None
    source = resolve_lm(cfg, hash_folder=False)
    return str(source.path) if source else None
