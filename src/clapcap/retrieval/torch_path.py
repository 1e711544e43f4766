"""The retrieval counts through torch, on any device (a GPU when there is one).

The same definitions as the numpy paths (:mod:`clapcap.retrieval.metrics`): similarities are
float64 dot products of the L2-normalised embeddings rounded to float32, computed block by
block on the device; ranks count the candidates scoring >= each positive (pessimistic ties).
Like the float64 numpy path it computes t2a from caption blocks and a2t from clip blocks,
each query's scores coming from one matrix product, so equal vectors stay tied. Float64
products are never TF32, whatever ``torch.backends.cuda.matmul.allow_tf32`` says.
"""

from __future__ import annotations

import numpy as np
import torch

from clapcap.retrieval.screen import Counts


def _t2a(text: torch.Tensor, audio: torch.Tensor, idx: torch.Tensor, step: int) -> torch.Tensor:
    n_cap = text.shape[0]
    out = torch.empty(n_cap, dtype=torch.int64, device=text.device)
    for a in range(0, n_cap, step):
        block = (text[a:a + step] @ audio.T).to(torch.float32)  # (R, n_clips)
        thr = block[torch.arange(block.shape[0], device=block.device), idx[a:a + step]]
        out[a:a + step] = (block >= thr[:, None]).sum(dim=1)
    return out


def _a2t(text: torch.Tensor, audio: torch.Tensor, idx: np.ndarray,
         step: int) -> tuple[torch.Tensor, torch.Tensor]:
    n_cap, n_clips, dev = text.shape[0], audio.shape[0], text.device
    by_clip = np.argsort(idx, kind="stable")  # captions grouped by clip
    starts = np.searchsorted(idx[by_clip], np.arange(n_clips + 1))
    score = torch.empty(n_cap, dtype=torch.float32, device=dev)
    ge = torch.empty(n_cap, dtype=torch.int64, device=dev)
    for a in range(0, n_clips, step):
        block = (audio[a:a + step] @ text.T).to(torch.float32)  # (R, n_captions)
        pairs = by_clip[starts[a]:starts[min(a + step, n_clips)]]
        for c0 in range(0, pairs.size, step):  # gathered rows stay within the budget
            sub = torch.from_numpy(pairs[c0:c0 + step]).to(dev)
            rows = block[torch.from_numpy(idx[pairs[c0:c0 + step]] - a).to(dev)]  # (len(sub), n_cap)
            s = rows[torch.arange(sub.numel(), device=dev), sub]
            score[sub] = s
            ge[sub] = (rows >= s[:, None]).sum(dim=1)
    return score, ge


def device_counts(text: np.ndarray, audio: np.ndarray, idx: np.ndarray, *, block_bytes: int,
                  device: str | torch.device) -> Counts:
    """t2a and a2t counts of every (caption, positive clip) pair, computed on ``device``.

    Args:
        text: (n_captions, D) float64 L2-normalised caption embeddings.
        audio: (n_clips, D) float64 L2-normalised clip embeddings.
        idx: (n_captions,) int64 clip of each caption; every clip has a caption.
        block_bytes: device memory budget of one similarity block.
        device: a torch device (``"cuda"``, ``"cuda:1"``, ``"cpu"``).

    Returns:
        :class:`clapcap.retrieval.screen.Counts` as numpy arrays, equal to the numpy paths'.

    Raises:
        RuntimeError: from torch, when ``device`` does not exist or runs out of memory.
    """
    dev = torch.device(device)
    text_t = torch.from_numpy(np.ascontiguousarray(text, dtype=np.float64)).to(dev)
    audio_t = torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float64)).to(dev)
    n_cap, n_clips = text_t.shape[0], audio_t.shape[0]
    # float64 product + its float32 copy + the comparison mask: 13 bytes per score
    t2a = _t2a(text_t, audio_t, torch.from_numpy(idx).to(dev), max(1, block_bytes // (n_clips * 13)))
    score, a2t = _a2t(text_t, audio_t, idx, max(1, block_bytes // (n_cap * 13)))
    return Counts(t2a.cpu().numpy(), score.cpu().numpy().astype(np.float64), a2t.cpu().numpy())
