"""The table of retrieval metrics: for each metric, its per-query value, how queries
aggregate into the corpus value, and how tables title it.

Every reader goes through this table: the corpus metrics (:func:`clapcap.retrieval.metrics.aggregate`),
the bootstrap (:mod:`clapcap.retrieval.bootstrap`), the item scores of a registered model
(:mod:`clapcap.retrieval.item_scores`), the RobustCLAP benchmark, the report's retrieval
table and the model cards. A per-query key names one metric family and, for a cut-off
family, its ``k``:

=====================  ===================  ==========  ===========================================
per-query key          corpus key           aggregate   per-query value (docs/retrieval_metrics.md)
=====================  ===================  ==========  ===========================================
``r@k``                ``r@k``              mean        1 if the best positive's rank <= k, else 0
``map``                ``map``              mean        average precision over the full ranking
``map@k``              ``map@k``            mean        AP of the positives ranked <= k, over all positives
``mrr``                ``mrr``              mean        1 / the best positive's rank
``mrr@k``              ``mrr@k``            mean        1 / the best rank when <= k, else 0
``ndcg@k``             ``ndcg@k``           mean        DCG@k / IDCG@k, binary gains, log2 discount
``recall@k``           ``recall@k``         mean        positives ranked <= k / positives
``precision@k``        ``precision@k``      mean        positives ranked <= k / k
``rank``               ``median_rank``      median      the best positive's rank (lower is better)
``map_norm_min@k``     ``map_norm_min@k``   mean        zero-shot AP@k over min(labels, k)
``accuracy``           ``accuracy``         mean        1 if the top class is a true label
=====================  ===================  ==========  ===========================================

The median of an even number of queries is the mean of the two middle values (``numpy.median``).
Ranks are 1-based and pessimistic (:mod:`clapcap.retrieval.ranking`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Family:
    """One row of the table (module docstring); ``{k}`` in a name or label is the cut-off."""

    per_query: str
    corpus: str
    aggregate: str  # "mean" or "median"
    label: str
    higher_is_better: bool = True


FAMILIES: tuple[Family, ...] = (
    Family("r@{k}", "r@{k}", "mean", "R@{k}"),
    Family("map", "map", "mean", "mAP"),
    Family("map@{k}", "map@{k}", "mean", "mAP@{k}"),
    Family("mrr", "mrr", "mean", "MRR"),
    Family("mrr@{k}", "mrr@{k}", "mean", "MRR@{k}"),
    Family("ndcg@{k}", "ndcg@{k}", "mean", "nDCG@{k}"),
    Family("recall@{k}", "recall@{k}", "mean", "Recall@{k}"),
    Family("precision@{k}", "precision@{k}", "mean", "P@{k}"),
    Family("rank", "median_rank", "median", "median rank", higher_is_better=False),
    Family("map_norm_min@{k}", "map_norm_min@{k}", "mean", "mAP@{k} (norm. min(labels, {k}))"),
    Family("accuracy", "accuracy", "mean", "accuracy"),
)

# The columns of the report's retrieval table and of the leaderboard rows, in order.
LEADERBOARD = ("r@1", "r@5", "r@10", "map@10")


@dataclass(frozen=True)
class RetrievalMetric:
    """One metric of the table at its cut-off: its keys, aggregate and label."""

    per_query: str
    name: str  # the corpus value's key (results JSON, MLflow before sanitising, reports)
    aggregate: str
    label: str
    higher_is_better: bool

    def reduce(self, values: np.ndarray) -> float:
        """The corpus value of per-query ``values``."""
        return float(np.median(values) if self.aggregate == "median" else np.mean(values))


def _patterns() -> list[tuple[re.Pattern[str], Family]]:
    return [(re.compile("^" + re.escape(f.per_query).replace(re.escape("{k}"), r"(?P<k>[1-9][0-9]*)") + "$"), f)
            for f in FAMILIES]


_PATTERNS = _patterns()


def metric(per_query_key: str, *, strict: bool = True) -> RetrievalMetric:
    """The table's metric of a per-query key (``r@10``, ``rank``, ``ndcg@5``).

    ``strict=False`` is for item scores that are not all retrieval's (a registered
    captioner's ``fense``, ``spider``, ...): a key in no family is a per-item score whose
    corpus value is its mean, under its own name. That is the one rule for them; the paired
    bootstrap of two registered versions reads it.

    Raises:
        KeyError: with ``strict``, naming the key and the table's families, for a key in no family.
    """
    for pattern, family in _PATTERNS:
        if (m := pattern.match(per_query_key)) is not None:
            k = m.groupdict().get("k", "")
            return RetrievalMetric(per_query_key, family.corpus.format(k=k), family.aggregate,
                                   family.label.format(k=k), family.higher_is_better)
    if not strict:
        return RetrievalMetric(per_query_key, per_query_key, "mean", per_query_key, True)
    raise KeyError(f"{per_query_key!r} is no retrieval metric; the table's keys are "
                   f"{', '.join(f.per_query for f in FAMILIES)}")


def by_name(name: str) -> RetrievalMetric:
    """The metric whose corpus key is ``name`` (``median_rank`` is the ``rank`` metric).

    Raises:
        KeyError: for a name that is no metric of the table.
    """
    return metric("rank" if name == "median_rank" else name)


def core(ks: Sequence[int]) -> tuple[RetrievalMetric, ...]:
    """The harness's metrics of one direction, in output order: ``r@k`` for each k, ``map``,
    ``map@10``, ``mrr``, ``rank`` (:func:`clapcap.retrieval.metrics.per_query_metrics`)."""
    return tuple(metric(key) for key in (*(f"r@{k}" for k in ks), "map", "map@10", "mrr", "rank"))


def aggregate_values(values: Mapping[str, np.ndarray], *, strict: bool = True) -> dict[str, float]:
    """Corpus values of one direction's per-query values, keyed and ordered as ``values``
    (``rank`` becomes ``median_rank``); ``strict`` as in :func:`metric`.

    Raises:
        KeyError: with ``strict``, for a key that is no metric of the table.
    """
    return {(m := metric(key, strict=strict)).name: m.reduce(v) for key, v in values.items()}
