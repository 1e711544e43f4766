"""The frozen bottom of a pretrained text tower, computed once per caption.

With ``text_trainable_layers: k`` the MiniLM CLAP trains only the top ``k`` layers of its
text tower (and the pooler); the embeddings and the layers below are frozen, so their output
for a caption is the same in every epoch. :func:`cached_frozen_bottom` computes that output
once per distinct caption (eval mode: no dropout; no gradient) and looks it up afterwards,
in training batches and validation passes alike. Only the top layers then run per step.

Hand-written: neither transformers nor PEFT caches a frozen prefix's activations.

Training with the cache differs from training without it in one way: the frozen layers run
without dropout (docs/encoders.md). Everything after them is the model's own forward pass.

With ``store`` (a folder) the computed outputs also go to disk, in a file named by a hash of
the frozen layers' weights, and a later block with the same frozen layers reads them back:
the fine-tunes of one base model (RobustCLAP, its control, the seed study) and a rerun after
a crash compute each text once. :func:`precompute` computes a block's texts up front, longest together so that little
padding is computed, and :func:`fill_store` a store ahead of training (the
``robust_text_store`` stage); a block opened with ``read_only=True`` reads such a store and never writes it (it is another
stage's output), keeping any text it lacks in memory.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_CHUNK = 64


def _lookup_module(frozen: Any, n_frozen: int, pad_id: int) -> Any:
    import torch

    class FrozenBottom(torch.nn.Module):
        """Stands in for the text tower's embeddings: the output of its frozen bottom layers."""

        def __init__(self) -> None:
            super().__init__()
            self._frozen = [frozen]  # a list: not a submodule, so not in state_dict or .to()
            self._memo: dict[tuple[int, ...], torch.Tensor] = {}

        def _compute(self, keys: list[tuple[int, ...]], device: Any) -> None:
            tower = self._frozen[0]
            if next(tower.parameters()).device != device:
                tower.to(device)
            for s in range(0, len(keys), _CHUNK):
                chunk = keys[s:s + _CHUNK]
                length = max(len(k) for k in chunk)
                ids = torch.full((len(chunk), length), pad_id, dtype=torch.long, device=device)
                mask = torch.zeros((len(chunk), length), dtype=torch.long, device=device)
                for i, k in enumerate(chunk):
                    ids[i, :len(k)] = torch.tensor(k, dtype=torch.long, device=device)
                    mask[i, :len(k)] = 1
                with torch.no_grad():
                    hidden = tower(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
                for i, k in enumerate(chunk):
                    self._memo[k] = hidden[n_frozen][i, :len(k)].detach().clone()

        def forward(self, input_ids: Any = None, position_ids: Any = None, token_type_ids: Any = None,
                    inputs_embeds: Any = None, **_: Any) -> Any:
            if input_ids is None or inputs_embeds is not None or position_ids is not None:
                raise ValueError("the cached frozen text layers take input_ids only (no inputs_embeds or "
                                 "position_ids)")
            if token_type_ids is not None and bool(token_type_ids.any()):
                raise ValueError("the cached frozen text layers take token type 0 only")
            real = input_ids != pad_id
            lengths = real.sum(dim=1)
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            if not bool((real == (positions[None, :] < lengths[:, None])).all()):
                raise ValueError("the cached frozen text layers need right-padded input_ids (the padding "
                                 f"token {pad_id} only after a caption's tokens)")
            keys = [tuple(row[:n]) for row, n in zip(input_ids.tolist(), lengths.tolist(), strict=True)]
            missing = [k for k in dict.fromkeys(keys) if k not in self._memo]
            if missing:
                self._compute(missing, input_ids.device)
            first = self._memo[keys[0]]
            out = first.new_zeros((input_ids.shape[0], input_ids.shape[1], first.shape[-1]))
            for i, k in enumerate(keys):
                out[i, :len(k)] = self._memo[k]
            return out

    return FrozenBottom()


def frozen_key(tower: Any, n_frozen: int) -> str:
    """Hash of what decides the frozen layers' output: the embeddings' and the bottom
    ``n_frozen`` layers' weights (names, shapes, bytes), and the padding id."""
    digest = hashlib.sha256(f"{n_frozen}:{tower.config.pad_token_id}".encode())
    prefixes = ("embeddings.", *(f"encoder.layer.{i}." for i in range(n_frozen)))
    for name, tensor in sorted(tower.state_dict().items()):
        if name.startswith(prefixes):
            digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}".encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def _load_store(path: Path) -> dict[tuple[int, ...], Any]:
    import torch

    if not path.is_file():
        return {}
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
        return {tuple(k): v for k, v in zip(data["keys"], data["values"], strict=True)}
    except Exception as err:  # a damaged file is recomputed, never trusted
        logger.warning("%s: unreadable frozen-text store (%s): recomputed", path, err)
        return {}


def _save_store(path: Path, memo: dict[tuple[int, ...], Any]) -> None:
    from clapcap.utils.torch_io import save_torch  # the same tensors give the same bytes

    save_torch({"keys": [list(k) for k in memo], "values": [v.cpu() for v in memo.values()]}, path)


def store_path(model: Any, trainable_layers: int, store: str | Path) -> Path | None:
    """The store file of ``model``'s frozen text layers in folder ``store`` (None: nothing frozen)."""
    tower = model.text_model
    n_layers = len(tower.encoder.layer)
    if trainable_layers < 0 or trainable_layers >= n_layers:
        return None
    return Path(store) / f"frozen_text_{frozen_key(tower, n_layers - trainable_layers)[:16]}.pt"


@contextmanager
def cached_frozen_bottom(model: Any, trainable_layers: int, *, store: str | Path | None = None,
                         read_only: bool = False) -> Iterator[int]:
    """Run ``model``'s text tower with its frozen bottom layers cached, inside the block.

    ``model`` is a ``ClapModel`` whose text tower has ``trainable_layers`` trainable top layers
    (:func:`clapcap.clap.minilm.set_text_trainable`; -1, or as many as the tower has:
    nothing to cache). Inside the block the tower's embeddings module returns the cached
    output of the frozen layers and ``encoder.layer`` holds the trainable ones only, so
    ``state_dict()`` has the trainable layers under new indices; on exit the tower is
    restored, with the trained layers in place.

    ``store``: a folder for ``frozen_text_<hash>.pt`` (see the module docstring): read on
    entry, written on exit (also when the block raises) when new texts were computed, unless
    ``read_only`` (then texts missing from it are computed and kept in memory only).

    Yields:
        The number of cached (frozen) layers; 0 when nothing is cached.
    """
    import torch

    tower = model.text_model
    layers = tower.encoder.layer
    if trainable_layers < 0 or trainable_layers >= len(layers):
        yield 0
        return
    n_frozen = len(layers) - trainable_layers
    frozen = copy.deepcopy(tower).eval()
    for p in frozen.parameters():
        p.requires_grad_(False)
    embeddings = tower.embeddings
    lookup = _lookup_module(frozen, n_frozen, int(tower.config.pad_token_id))
    path = store_path(model, trainable_layers, store) if store else None
    if path is not None:
        lookup._memo.update(_load_store(path))
        logger.info("%s: %d texts' frozen-layer outputs read back", path, len(lookup._memo))
        if read_only and not lookup._memo:
            logger.warning("%s: no frozen-text store for these frozen layers: every text is computed "
                           "(in memory only)", path)
    n_stored = len(lookup._memo)
    tower.embeddings = lookup
    tower.encoder.layer = torch.nn.ModuleList(list(layers)[n_frozen:])
    try:
        yield n_frozen
    finally:
        tower.embeddings, tower.encoder.layer = embeddings, layers
        if read_only and len(lookup._memo) > n_stored:
            logger.info("%d texts were not in the read-only store %s (computed in memory)",
                        len(lookup._memo) - n_stored, path)
        elif path is not None and len(lookup._memo) > n_stored:
            _save_store(path, lookup._memo)


def precompute(model: Any, tokenizer: Any, texts: list[str], *, progress: bool = True) -> int:
    """Inside a :func:`cached_frozen_bottom` block that caches layers: compute the frozen
    layers' output of each distinct text of ``texts`` not yet held, longest first, in chunks
    of similar length (little padding is computed). Texts are tokenized as training tokenizes
    them (:func:`clapcap.clap.preprocessing.tokenize`).

    Returns:
        The number of texts the block holds.

    Raises:
        ValueError: outside such a block.
    """
    import torch
    from tqdm.auto import tqdm

    from clapcap.clap.preprocessing import tokenize

    lookup = model.text_model.embeddings
    if getattr(lookup, "_memo", None) is None:
        raise ValueError("precompute runs inside a cached_frozen_bottom block that caches frozen layers")
    device = next(model.parameters()).device
    keys: dict[tuple[int, ...], None] = {}
    distinct = list(dict.fromkeys(texts))
    for s in range(0, len(distinct), 1024):
        enc = tokenize(tokenizer, distinct[s:s + 1024])
        for row, n in zip(enc["input_ids"].tolist(), enc["attention_mask"].sum(dim=1).tolist(), strict=True):
            keys[tuple(row[:n])] = None
    todo = sorted((k for k in keys if k not in lookup._memo), key=len, reverse=True)
    step = _CHUNK * 8
    for s in tqdm(range(0, len(todo), step), desc="frozen text layers", disable=not progress, unit="chunk"):
        with torch.no_grad():
            lookup._compute(todo[s:s + step], device)
    return len(lookup._memo)


def fill_store(model: Any, tokenizer: Any, trainable_layers: int, texts: list[str], store: str | Path, *,
               progress: bool = True) -> tuple[Path, int]:
    """Compute the frozen layers' output of each distinct text of ``texts`` (:func:`precompute`)
    into the store file in folder ``store``; a store already holding some of them is extended.

    Returns:
        ``(store file, texts in it)``.

    Raises:
        ValueError: when ``trainable_layers`` leaves nothing frozen.
    """
    path = store_path(model, trainable_layers, store)
    if path is None:
        raise ValueError(f"text_trainable_layers {trainable_layers}: no frozen text layer to store")
    with cached_frozen_bottom(model, trainable_layers, store=store):
        n = precompute(model, tokenizer, texts, progress=progress)
    return path, n
