"""The champion captioner in DCASE's formats: a submission CSV and the metrics table.

DCASE's automated audio captioning task (task 6) takes one CSV per system, with the columns
``file_name,caption_predicted`` (one row per evaluation clip; ``file_name`` is the audio file's
name). The column names are the challenge baseline's (``dcase24t6/utils/dcase.py``,
``DCASE_TASK_AAC_FIELDNAMES``, in Labbeti/dcase2024-task6-baseline).

The metrics table follows the column order of that baseline's README ("Detailed results",
commit 137849f): BLEU-1 to BLEU-4, METEOR, ROUGE-L, CIDEr-D, SPICE, SPIDEr, SPIDEr-FL,
SBERT-sim, FER, FENSE, BERTScore, Vocabulary. Every score comes from
:func:`clapcap.evaluation.captioning_metrics.score_captions` (aac-metrics' own functions, one PTB
tokenisation) on the champion's saved test captions, and the vocabulary from
:func:`clapcap.experiments.captioning.vocab.caption_stats` (aac-metrics' ``vocab``). A metric that
cannot run here is written as empty with its reason beside it, never replaced:

- SPICE, SPIDEr and SPIDEr-FL need Stanford CoreNLP 3.6.0, and SBERT-sim, FER, FENSE and
  SPIDEr-FL the FENSE checkpoints, none of which installs offline (``clapcap assets download``
  on a machine with internet adds them, and this table fills in on the next run);
- BERTScore is not part of clapcap's scorer (it needs a RoBERTa-large checkpoint that does not
  install offline either).

Our test split is the corpus's own, not Clotho's evaluation split: the numbers compare with
DCASE's only in format.
"""

from __future__ import annotations

import csv
import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clapcap.data.prepare import load_dataset
from clapcap.experiments.captioning.registry import candidates
from clapcap.utils.io import atomic_path, read_json, write_json

logger = logging.getLogger(__name__)

SUBMISSION_FIELDS = ("file_name", "caption_predicted")
# (column, clapcap / aac-metrics key); None: not computed by clapcap (reason in NOT_SCORED)
DCASE_COLUMNS: tuple[tuple[str, str | None], ...] = (
    ("BLEU-1", "bleu_1"), ("BLEU-2", "bleu_2"), ("BLEU-3", "bleu_3"), ("BLEU-4", "bleu_4"),
    ("METEOR", "meteor"), ("ROUGE-L", "rouge_l"), ("CIDEr-D", "cider_d"), ("SPICE", "spice"),
    ("SPIDEr", "spider"), ("SPIDEr-FL", "spider_fl"), ("SBERT-sim", "sbert_sim"), ("FER", "fer"),
    ("FENSE", "fense"), ("BERTScore", None), ("Vocabulary (words)", "vocab"),
)
NOT_SCORED = {"BERTScore": "not part of clapcap's scorer: BERTScore needs a RoBERTa-large checkpoint "
                           "that does not install offline"}


@dataclass
class DcaseParams:
    """``dcase_export`` section of params.yaml."""

    captioning_dir: str = "results/captioning"
    champion: str = "results/captioning/champion.json"
    dataset_dir: str = "data/corpus"
    out_dir: str = "reports/dcase"


def champion_predictions(params: DcaseParams) -> tuple[str, dict[str, str]]:
    """The champion's name and its saved test captions ``{clip_id: caption}``."""
    name = read_json(params.champion)["name"]
    found = {c["name"]: c for c in candidates(params.captioning_dir)}
    if name not in found:
        raise ValueError(f"{params.champion}: champion {name!r} is not among the study's results in "
                         f"{params.captioning_dir} (rerun caption_register)")
    path = Path(found[name]["test_predictions"])
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the champion's test captions are missing; rerun its stage (dvc repro)")
    return name, read_json(path)


def submission_rows(predictions: dict[str, str], audio_names: dict[str, str]) -> list[tuple[str, str]]:
    """``(file_name, caption_predicted)`` rows in file-name order.

    Raises:
        ValueError: when a clip has no audio file name or two clips share one.
    """
    missing = sorted(set(predictions) - set(audio_names))
    if missing:
        raise ValueError(f"{len(missing)} predicted clip(s) not in the test split, e.g. {missing[:5]}")
    names = [audio_names[c] for c in predictions]
    if len(set(names)) != len(names):
        raise ValueError("two test clips share an audio file name; DCASE's file_name must be unique")
    return sorted((audio_names[c], " ".join(predictions[c].split())) for c in predictions)


def metrics_row(scores: dict[str, Any], vocab: int) -> list[dict[str, Any]]:
    """One entry per DCASE column: ``{"column", "key", "value", "reason"}`` (value None when
    unavailable, with the reason)."""
    out = []
    for column, key in DCASE_COLUMNS:
        if key is None:
            out.append({"column": column, "key": None, "value": None, "reason": NOT_SCORED[column]})
        elif key == "vocab":
            out.append({"column": column, "key": key, "value": vocab, "reason": None})
        elif key in scores["corpus"]:
            out.append({"column": column, "key": key, "value": float(scores["corpus"][key]), "reason": None})
        else:
            out.append({"column": column, "key": key, "value": None,
                        "reason": scores["unavailable"].get(key, "not computed")})
    return out


def export_dcase(params: DcaseParams) -> dict[str, Any]:
    """Write ``submission.csv``, ``metrics.csv`` (one row, DCASE's column order), and
    ``metrics.json`` (values, keys and the reason of each empty cell) into ``out_dir``."""
    from clapcap.evaluation.captioning_metrics import score_captions
    from clapcap.experiments.captioning.vocab import caption_stats

    name, predictions = champion_predictions(params)
    ds = load_dataset(params.dataset_dir)
    refs, test = ds.references("test"), ds.split("test")
    audio = {str(c): Path(str(p)).name for c, p in zip(test["clip_id"], test["audio_path"], strict=True)}
    rows = submission_rows(predictions, audio)
    keys = [k for _, k in DCASE_COLUMNS if k not in (None, "vocab")]
    scores = score_captions(predictions, refs, metrics=keys)
    table = metrics_row(scores, caption_stats(predictions, refs)["vocab"])
    out = Path(params.out_dir)
    with atomic_path(out / "submission.csv") as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(SUBMISSION_FIELDS)
            w.writerows(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["system", *(t["column"] for t in table)])
    w.writerow([name, *("" if t["value"] is None else (t["value"] if isinstance(t["value"], int)
                                                       else f"{t['value']:.4f}") for t in table)])
    with atomic_path(out / "metrics.csv") as tmp:
        tmp.write_text(buf.getvalue(), encoding="utf-8")
    record = {"system": name, "n_clips": len(rows), "split": "test", "columns": table,
              "source": "column order of the DCASE 2024 task 6 baseline README (Labbeti/dcase2024-task6-baseline)"}
    write_json(out / "metrics.json", record)
    logger.info("dcase_export: %s, %d clips, %d of %d columns scored", name, len(rows),
                sum(t["value"] is not None for t in table), len(table))
    return record
