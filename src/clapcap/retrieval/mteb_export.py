"""Retrieval results of an embedding dump as MTEB ``TaskResult`` JSON files, one per direction.

Schema checked against embeddings-benchmark/mteb (``mteb/results/task_result.py``,
``mteb/_evaluators/retrieval_metrics.py``, ``mteb/abstasks/retrieval.py`` at commit
a905523d0111f999360b312bd4a601a0a97a0e1c; ``tools/check_mteb_export.py`` loads a file with
an installed mteb's ``TaskResult.from_disk``). A file is::

    {"dataset_revision": str, "task_name": str, "mteb_version": null,
     "scores": {"<split>": [{"hf_subset": "default", "languages": ["eng-Latn"],
                             "main_score": float, "ndcg_at_1": float, ...}]},
     "evaluation_time": null, "kg_co2_emissions": null, "date": null,
     "evaluation_phases": null, "clapcap": {...provenance...}}

Choices, and why:

- **Two tasks, not two subsets.** MTEB's own audio retrieval tasks are one task per
  direction (``ClothoT2ARetrieval``, ``ClothoA2TRetrieval``, each with the single subset
  ``default``): a ``TaskResult`` holds one task, and its subsets are languages or configs of
  the same queries, not another query set. So ``<Prefix>T2ARetrieval.json`` and
  ``<Prefix>A2TRetrieval.json``. The names are clapcap's own (``Clapcap<Dataset>...``), never
  an MTEB task name: the queries are not MTEB's Clotho/AudioCaps data.
- **Metric names** are MTEB's retrieval keys (``make_score_dict``): ``hit_rate_at_k`` =
  clapcap ``r@k``, ``map_at_k`` = ``map@k``, ``ndcg_at_k`` = ``ndcg@k``, ``mrr_at_k`` =
  ``mrr@k``, ``recall_at_k`` = ``recall@k``, ``precision_at_k`` = ``precision@k``
  (definitions: :mod:`clapcap.retrieval.ir_metrics`), each the mean over the direction's
  queries (t2a: captions, one positive; a2t: clips, every caption of the clip a positive).
  Ties are clapcap's pessimistic rule; MTEB/trec_eval break them by document id, so on tied
  scores these values are a lower bound of MTEB's. MTEB also writes ``accuracy``
  (= recall_at_1) and abstention ``nauc_*`` keys; they are not exported.
- **ks** = MTEB's ``AbsTaskRetrieval.k_values`` (1, 3, 5, 10, 20, 100, 1000), not clipped
  to the corpus size (MTEB does not clip: trec_eval's ``P_1000`` divides by 1000 on any
  corpus).
- **main_score**: ``ndcg_at_10`` by default, the main score of MTEB's text retrieval tasks.
  MTEB's audio tasks (``ClothoT2ARetrieval``, ``AudioCaps...``) declare ``hit_rate_at_5``;
  pass ``main_score="hit_rate_at_5"`` to compare with those.
- **Provenance, honestly.** ``mteb_version`` is null (the schema allows it; mteb computed
  nothing here, and its loader accepts null); ``dataset_revision`` is the SHA-256 of the
  evaluation set's content (clip ids, captions, caption -> clip index; not the
  embeddings); ``evaluation_time`` and ``date`` are null so that the bytes depend on
  content only. The extra top-level ``clapcap`` block (the dump's SHA-256, the sizes, the
  tie rule, the definitions) is ignored by MTEB's loader.
- Values are written at full float64 precision (MTEB rounds to 5 decimals in the evaluator
  and 6 in ``to_disk``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clapcap.data.dump import EmbeddingDump, load_dump
from clapcap.retrieval.ir_metrics import FAMILIES, check_ks, ir_per_query
from clapcap.retrieval.metrics import DEFAULT_BLOCK_BYTES, DIRECTIONS, ranked_dump
from clapcap.retrieval.ranking import Ranked
from clapcap.utils.io import sha256_file, sha256_json, write_json

logger = logging.getLogger(__name__)

MTEB_KS = (1, 3, 5, 10, 20, 100, 1000)  # mteb.abstasks.retrieval.AbsTaskRetrieval.k_values
MAIN_SCORE = "ndcg_at_10"
SCHEMA_SOURCE = ("embeddings-benchmark/mteb a905523d0111f999360b312bd4a601a0a97a0e1c "
                 "(mteb/results/task_result.py, mteb/_evaluators/retrieval_metrics.py)")
# clapcap family -> MTEB key prefix (``<prefix>_at_<k>``)
MTEB_NAMES = {"r": "hit_rate", "map": "map", "ndcg": "ndcg", "mrr": "mrr", "recall": "recall",
              "precision": "precision"}
TASK_SUFFIX = {"t2a": "T2ARetrieval", "a2t": "A2TRetrieval"}
TIE_RULE = ("pessimistic: a positive ranks below every non-positive with an equal float32 score "
            "(MTEB/trec_eval break ties by document id)")
DEFINITIONS = {
    "hit_rate_at_k": "clapcap r@k: 1 if the best positive's rank <= k",
    "map_at_k": "clapcap map@k: (1/|P|) sum over positives with rank_i <= k of i/rank_i",
    "ndcg_at_k": "clapcap ndcg@k: sum_{rank_i<=k} 1/log2(rank_i+1) / sum_{j<=min(|P|,k)} 1/log2(j+1)",
    "mrr_at_k": "clapcap mrr@k: 1/rank_1 if rank_1 <= k else 0",
    "recall_at_k": "clapcap recall@k: #{positives with rank <= k} / |P|",
    "precision_at_k": "clapcap precision@k: #{positives with rank <= k} / k",
}

for _family in FAMILIES:  # every clapcap family has its MTEB name
    assert _family in MTEB_NAMES, _family


def mteb_scores(per_query: dict[str, np.ndarray], ks: Sequence[int]) -> dict[str, float]:
    """Means of :func:`clapcap.retrieval.ir_metrics.ir_per_query` values under MTEB's keys.

    Raises:
        ValueError: when ``per_query`` lacks a metric at one of ``ks``.
    """
    out: dict[str, float] = {}
    for family in FAMILIES:
        for k in ks:
            values = per_query.get(f"{family}@{k}")
            if values is None:
                raise ValueError(f"per_query: missing {family}@{k}; expected ir_per_query output")
            out[f"{MTEB_NAMES[family]}_at_{k}"] = float(np.mean(values))
    return out


def task_name(dataset: str, direction: str) -> str:
    """clapcap's MTEB task name of ``dataset`` and ``direction``: ``Clapcap<Dataset><T2A|A2T>Retrieval``.

    ``dataset`` is reduced to its letters and digits, each word capitalised
    (``corpus`` -> ``ClapcapCorpusT2ARetrieval``, ``clotho_v2`` -> ``ClapcapClothoV2...``).

    Raises:
        ValueError: on an unknown direction.
    """
    if direction not in TASK_SUFFIX:
        raise ValueError(f"direction: expected one of {list(TASK_SUFFIX)}, found {direction!r}")
    words = re.findall(r"[A-Za-z0-9]+", dataset)
    return "Clapcap" + "".join(w[:1].upper() + w[1:] for w in words) + TASK_SUFFIX[direction]


def evaluation_set_revision(dump: EmbeddingDump) -> str:
    """SHA-256 of what the queries and candidates are (clip ids, captions, caption -> clip
    index), not of the embeddings: two models evaluated on one set share it."""
    return sha256_json({"clip_ids": list(dump.clip_ids), "captions": list(dump.captions),
                        "caption_clip_index": np.asarray(dump.caption_clip_index).tolist()})


def task_results(ranked: dict[str, Ranked], n_queries: dict[str, int], *, dataset: str,
                 dataset_revision: str, split: str = "test", ks: Sequence[int] = MTEB_KS,
                 main_score: str = MAIN_SCORE, languages: Sequence[str] = ("eng-Latn",),
                 provenance: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """One MTEB ``TaskResult`` dict per direction from the per-pair pessimistic ranks.

    Args:
        ranked: ``{"t2a": Ranked, "a2t": Ranked}`` (:func:`clapcap.retrieval.metrics.ranked_dump`).
        n_queries: number of queries of each direction (captions for t2a, clips for a2t).
        dataset: names the tasks (:func:`task_name`).
        dataset_revision: the ``dataset_revision`` field (:func:`evaluation_set_revision`).
        split: the ``scores`` key; ks: cut-offs; languages: the subset's ``languages``.
        main_score: the MTEB key copied into ``main_score``.
        provenance: extra facts stored under the top-level ``clapcap`` key.

    Returns:
        ``{direction: TaskResult dict}`` (module docstring).

    Raises:
        ValueError: on a missing direction, bad ``ks``, malformed ranks, a ``main_score``
            that is not among the exported keys, or an empty split or revision.
    """
    ks = check_ks(ks)
    if set(ranked) != set(DIRECTIONS) or set(n_queries) != set(DIRECTIONS):
        raise ValueError(f"ranked and n_queries: expected keys {list(DIRECTIONS)}, found "
                         f"{sorted(ranked)} and {sorted(n_queries)}")
    if not split or not dataset_revision:
        raise ValueError(f"split and dataset_revision must be non-empty, found {split!r}, {dataset_revision!r}")
    valid = [f"{MTEB_NAMES[f]}_at_{k}" for f in FAMILIES for k in ks]
    if main_score not in valid:
        raise ValueError(f"main_score: expected one of the exported keys {valid}, found {main_score!r}")
    out = {}
    for direction in DIRECTIONS:
        scores = mteb_scores(ir_per_query(ranked[direction], n_queries[direction], ks), ks)
        subset = {"hf_subset": "default", "languages": list(languages),
                  "main_score": scores[main_score], **scores}
        out[direction] = {
            "dataset_revision": dataset_revision, "task_name": task_name(dataset, direction),
            "mteb_version": None, "scores": {split: [subset]}, "evaluation_time": None,
            "kg_co2_emissions": None, "date": None, "evaluation_phases": None,
            "clapcap": {"direction": direction, "n_queries": int(n_queries[direction]),
                        "main_score": main_score, "ks": list(ks), "ties": TIE_RULE,
                        "definitions": DEFINITIONS, "mteb_schema": SCHEMA_SOURCE,
                        **(provenance or {})},
        }
    return out


def export_dump(dump_path: str | Path, out_dir: str | Path, *, ks: Sequence[int] = MTEB_KS,
                main_score: str = MAIN_SCORE, dataset: str | None = None,
                split: str | None = None, languages: Sequence[str] = ("eng-Latn",),
                max_block_bytes: int = DEFAULT_BLOCK_BYTES,
                device: str | None = None) -> dict[str, Path]:
    """Write ``<out_dir>/<task name>.json`` for t2a and a2t of one dump (atomically).

    ``dataset`` defaults to the last part of the dump's meta ``dataset`` (a folder:
    ``data/corpus`` -> ``corpus``), else ``"clapcap"``; ``split`` to its meta ``split``, else
    ``"test"``; ``device`` as in :func:`clapcap.retrieval.metrics.per_query_dump`
    (a torch device or None; same numbers).

    Returns:
        ``{direction: written path}``.

    Raises:
        FileNotFoundError: when the dump does not exist.
        DumpError: when it is invalid (shapes, NaN, a clip without caption, ...).
        ValueError: on bad ``ks``, ``main_score`` or a non-string meta dataset/split.
    """
    dump = load_dump(dump_path)
    # meta ``dataset`` is the prepared dataset's folder (``data/corpus``): its name names the task
    dataset = dataset if dataset is not None else Path(_meta_str(dump, "dataset", "clapcap", dump_path)).name
    split = split if split is not None else _meta_str(dump, "split", "test", dump_path)
    ranked = ranked_dump(dump, max_block_bytes=max_block_bytes, origin=str(dump_path), device=device)
    # No path or checkpoint name from the meta (either may be a machine path): the dump's hash.
    provenance = {"dump_sha256": sha256_file(dump_path), "n_clips": dump.n_clips,
                  "n_captions": dump.n_captions}
    results = task_results(ranked, {"t2a": dump.n_captions, "a2t": dump.n_clips}, dataset=dataset,
                           dataset_revision=evaluation_set_revision(dump), split=split, ks=ks,
                           main_score=main_score, languages=languages, provenance=provenance)
    written = {}
    for direction, result in results.items():
        written[direction] = write_json(Path(out_dir) / f"{result['task_name']}.json", result)
        logger.info("%s: %s %s = %.4f -> %s", dump_path, direction, main_score,
                    result["scores"][split][0]["main_score"], written[direction])
    return written


def _meta_str(dump: EmbeddingDump, key: str, default: str, origin: str | Path) -> str:
    value = dump.meta.get(key, default)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{origin}: meta {key!r}: expected a non-empty string, found {value!r}")
    return value
