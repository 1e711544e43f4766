"""The shared test split for reference captioners, and their scoring with the leakage check.

Split files (written once by :func:`dump_split`, read by every generator):

- ``split.csv``: one row per reference caption, columns ``clip_id``, ``audio_path``
  (absolute), ``caption``, ``is_audioset_eval`` (``True``/``False``/empty). Several rows
  per clip mean several references. This is the ``--split`` of ``reference score``.
- ``split.json``: ``{"split", "dataset", "clips": [{"clip_id", "audio_path", "captions",
  "is_audioset_eval"}]}``, for generators in other environments.

:func:`score_reference` scores a predictions JSON with the same metrics as the pipeline
(:func:`clapcap.evaluation.captioning_metrics.score_captions`) and adds the leakage verdict
(:mod:`clapcap.evaluation.leakage`). For a leaky model the held-out clips are scored on
their own and that row (``--held-out-name``) is the reportable one.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from clapcap.data.csv_reader import TableError, file_line, missing_columns, read_text_table
from clapcap.data.prepare import load_dataset
from clapcap.evaluation.captioning_metrics import score_captions
from clapcap.evaluation.leakage import KnownStatus, LeakageParams, decide_leakage
from clapcap.utils.io import atomic_path, read_json, write_json

logger = logging.getLogger(__name__)

SPLIT_COLUMNS = ["clip_id", "caption", "is_audioset_eval"]


@dataclass
class SplitClip:
    """One clip of the shared split."""

    clip_id: str
    audio_path: str
    captions: list[str]
    is_audioset_eval: bool | None


@dataclass
class ReferenceSplit:
    """The shared split: clips in file order."""

    clips: list[SplitClip] = field(default_factory=list)

    @property
    def references(self) -> dict[str, list[str]]:
        return {c.clip_id: list(c.captions) for c in self.clips}

    @property
    def flags(self) -> dict[str, bool | None]:
        return {c.clip_id: c.is_audioset_eval for c in self.clips}


def dump_split(dataset_dir: str | Path, out_dir: str | Path, *, split: str = "test") -> tuple[Path, Path]:
    """Write ``split`` of the prepared dataset as ``split.csv`` and ``split.json`` in ``out_dir``.

    Returns:
        The (csv, json) paths.

    Raises:
        ValueError: when the dataset has no clip in ``split``.
    """

    ds = load_dataset(dataset_dir)
    table = ds.split(split)
    if table.empty:
        raise ValueError(f"{dataset_dir}: no clips in split {split!r}")
    out_dir = Path(out_dir)
    # Paths relative to the split's own folder: no absolute path enters an output (two clones
    # in different folders write the same bytes); readers resolve them against that folder.
    clips = [SplitClip(str(r.clip_id), _relative(ds.audio_path(r.clip_id), out_dir), list(r.captions),
                       None if r.is_audioset_eval is None else bool(r.is_audioset_eval))
             for r in table.itertuples(index=False)]
    rows = [{"clip_id": c.clip_id, "audio_path": c.audio_path, "caption": cap,
             "is_audioset_eval": "" if c.is_audioset_eval is None else str(c.is_audioset_eval)}
            for c in clips for cap in c.captions]
    csv_path, json_path = out_dir / "split.csv", out_dir / "split.json"
    with atomic_path(csv_path) as tmp:
        pd.DataFrame(rows, columns=["clip_id", "audio_path", "caption", "is_audioset_eval"]).to_csv(tmp, index=False)
    write_json(json_path, {"split": split, "dataset": _relative(dataset_dir, out_dir),
                           "clips": [c.__dict__ for c in clips]})
    logger.info("split %s: %d clips, %d captions -> %s", split, len(clips), len(rows), csv_path)
    return csv_path, json_path


def _relative(path: str | Path, start: Path) -> str:
    """``path`` relative to the folder ``start`` (POSIX separators)."""
    return Path(os.path.relpath(Path(path).resolve(), start.resolve())).as_posix()


def _resolved(audio_path: str, folder: Path) -> str:
    """A split file's ``audio_path`` made usable from any working directory."""
    if not audio_path or Path(audio_path).is_absolute():
        return audio_path
    return str((folder / audio_path).resolve())


def _parse_flag(value: Any, path: Path, row: int) -> bool | None:
    text = str(value).strip().lower()
    if text in ("", "nan", "none"):
        return None
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise TableError(f"{path}: row {row}: is_audioset_eval must be True/False or empty, found {value!r}")


def read_split(path: str | Path) -> ReferenceSplit:
    """Read a split CSV (``clip_id``, ``caption``, ``is_audioset_eval``; ``audio_path`` optional, kept as written).

    Raises:
        FileNotFoundError: when ``path`` does not exist.
        TableError (a ValueError): naming the file and row (1-based file line) on a file
            that is not a CSV table, a missing column, an empty caption or a clip whose rows
            disagree on ``is_audioset_eval``.
    """
    path = Path(path)
    df = read_text_table(path, "split file")
    missing = missing_columns(df, SPLIT_COLUMNS)
    if missing:
        raise TableError(f"{path}: missing column(s) {missing}; expected {SPLIT_COLUMNS} (+ audio_path)")
    clips: dict[str, SplitClip] = {}
    for i, rec in enumerate(df.to_dict("records")):
        row = file_line(df, i)  # 1-based file line (the header is line 1)
        cid, cap = rec["clip_id"].strip(), rec["caption"]
        if not cid or not cap.strip():
            raise TableError(f"{path}: row {row}: expected a clip_id and a non-empty caption, found {rec}")
        flag = _parse_flag(rec["is_audioset_eval"], path, row)
        clip = clips.setdefault(cid, SplitClip(cid, rec.get("audio_path", ""), [], flag))
        if clip.is_audioset_eval != flag:
            raise TableError(f"{path}: row {row}: clip {cid!r} has is_audioset_eval={flag} but "
                             f"{clip.is_audioset_eval} on an earlier row")
        clip.captions.append(cap)
    if not clips:
        raise TableError(f"{path}: no rows")
    return ReferenceSplit(list(clips.values()))


def read_split_json(path: str | Path) -> ReferenceSplit:
    """Read ``split.json`` written by :func:`dump_split`.

    Raises:
        FileNotFoundError / ValueError: naming the file when missing or malformed.
    """
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("clips"), list):
        raise ValueError(f"{path}: expected an object with a 'clips' list")
    try:
        clips = [SplitClip(**c) for c in data["clips"]]
    except TypeError as err:
        raise ValueError(f"{path}: malformed clip entry: {err}") from err
    for clip in clips:
        clip.audio_path = _resolved(clip.audio_path, Path(path).parent)
    return ReferenceSplit(clips)


def _held_out_row(preds: dict[str, str], refs: dict[str, list[str]], ids: list[str], name: str,
                  score_kwargs: dict[str, Any]) -> dict[str, Any] | None:
    if not ids:
        logger.warning("no held-out clips: cannot score the clean row %s", name)
        return None
    sub = score_captions({c: preds[c] for c in ids}, {c: refs[c] for c in ids}, **score_kwargs)
    return {"name": name, "subset": "held_out", "n_clips": sub["n_clips"], "corpus": sub["corpus"],
            "unavailable": sub["unavailable"], "primary": sub["primary"]}


def score_reference(predictions_path: str | Path, split_path: str | Path, name: str, *,
                    out_path: str | Path | None = None, held_out_name: str | None = None,
                    trim_words: int | None = None, trim_sentences: bool = False,
                    metrics: list[str] | None = None, leakage: LeakageParams | None = None,
                    registry: dict[str, KnownStatus] | None = None, **score_kwargs: Any) -> dict[str, Any]:
    """Score a reference captioner's predictions on the shared split, with the leakage check.

    Returns:
        The :func:`score_captions` result plus ``"name"``, ``"leakage"`` (see
        :func:`clapcap.evaluation.leakage.decide_leakage`), ``"held_out_row"`` (scores of the
        held-out clips alone, computed when the model is leaky or ``held_out_name`` is
        given) and ``"reportable"`` (the row to report: the held-out one for a leaky model).
        Written to ``out_path`` when given.

    Raises:
        FileNotFoundError / ValueError: on missing files or predictions that do not match
            the split (naming the ids).
    """
    leakage = leakage or LeakageParams()
    split = read_split(split_path)
    refs, preds = split.references, read_json(predictions_path)
    if metrics is not None and leakage.metric not in metrics:
        metrics = [*metrics, leakage.metric]
    kwargs = {"metrics": metrics, "trim_words": trim_words, "trim_sentences": trim_sentences, **score_kwargs}
    try:
        result = score_captions(preds, refs, **kwargs)
    except ValueError as err:
        raise ValueError(f"{predictions_path} vs {split_path}: {err}") from err
    if leakage.metric in result["unavailable"]:
        raise ValueError(f"leakage metric {leakage.metric} unavailable: {result['unavailable'][leakage.metric]}")
    per_metric = {c: s[leakage.metric] for c, s in result["per_clip"].items()}
    verdict = decide_leakage(per_metric, split.flags, params=leakage, name=name, registry=registry)
    row = None
    if verdict["verdict"] == "leaky" or held_out_name:
        row = _held_out_row(preds, refs, verdict["held_out"]["clip_ids"], held_out_name or f"{name}_held_out", kwargs)
    reportable = row if verdict["verdict"] == "leaky" and row else \
        {"name": name, "subset": "all", "n_clips": result["n_clips"], "corpus": result["corpus"]}
    result = {"name": name, **result, "leakage": verdict, "held_out_row": row, "reportable": reportable,
              "inputs": {"predictions": str(predictions_path), "split": str(split_path)}}
    logger.info("%s: leakage %s (p=%s, %s); reportable row %s", name, verdict["verdict"],
                verdict["p_value"], verdict["source"], reportable["name"])
    if out_path is not None:
        write_json(out_path, result)
    return result
