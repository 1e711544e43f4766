"""A subset of a prepared dataset, by one of its columns, that shares the parent's audio.

The captioning encoder ablation on music runs on the corpus's music clips only (``source ==
"synthetic_music"``), and the real corpus's encoder axis on each family where an encoder is
specialised (``family``: speech, instruments, effects; :func:`column_subsets`).
:func:`subset_dataset` writes a dataset folder holding the filtered ``manifest.csv`` and a
``dataset.json`` whose ``root`` points, relatively, at the parent's audio root: no audio is
copied, and the folder's bytes do not depend on where the repository lives.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from clapcap.data.manifest import SPLITS, write_manifest
from clapcap.data.prepare import dataset_fingerprint, load_dataset
from clapcap.errors import InputError
from clapcap.utils.io import read_json, write_json
from clapcap.utils.skip import mark_skipped

logger = logging.getLogger(__name__)


@dataclass
class SubsetParams:
    """Section ``music_subset``: which clips of which dataset go where."""

    dataset_dir: str = "data/corpus"
    out_dir: str = "data/music"
    source: str = "synthetic_music"


def subset_dataset(src_dir: str | Path, out_dir: str | Path, *, source: str) -> Path:
    """Write the clips of ``src_dir`` whose ``source`` is ``source`` as a dataset in ``out_dir``.

    Returns:
        ``out_dir``.

    Raises:
        InputError: when no clip of the synthetic corpus has that source, or a split (train,
            val, test) would be empty. A real dataset without that source is skipped instead
            (``out_dir/SKIPPED.json``, :mod:`clapcap.utils.skip`).
    """
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    ds = load_dataset(src_dir)
    rows = ds.manifest[ds.manifest["source"] == source].reset_index(drop=True)
    if rows.empty and ds_source(src_dir) != "synthetic":
        mark_skipped([out_dir], stage="music_subset",
                     reason=f"{src_dir} is a {ds_source(src_dir)!r} dataset with no {source!r} clips (the "
                            f"music-encoder ablation runs on the synthetic corpus's music; set music_subset.source "
                            f"to a source of this dataset to run it)")
        return out_dir
    if rows.empty:
        found = sorted(ds.manifest["source"].astype(str).unique())
        raise InputError(f"{src_dir}: no clip has source {source!r}; sources are {found}")
    return _write_subset(src_dir, rows, out_dir, source, {"source": source}, root=ds.root,
                         fingerprint=dataset_fingerprint(src_dir))


def _write_subset(src_dir: str | Path, rows: pd.DataFrame, out_dir: str | Path, source: str,
                  how: dict[str, Any], *, root: Path, fingerprint: str) -> Path:
    """Write ``rows`` of dataset ``src_dir`` as the dataset ``out_dir`` (``source`` recorded as
    its source; ``how``: what picked the rows, recorded beside the parent's ``fingerprint``;
    ``root``: the parent's audio folder, which the subset's ``dataset.json`` points at)."""
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    counts = {split: int((rows["split"] == split).sum()) for split in SPLITS}
    empty = [s for s, n in counts.items() if n == 0]
    if empty:
        raise InputError(f"{src_dir}: the subset {how} has no clips in split(s) {empty}: {counts}")
    out_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(rows, out_dir / "manifest.csv")
    rel_root = Path(os.path.relpath(Path(root).resolve(), out_dir.resolve())).as_posix()
    write_json(out_dir / "dataset.json", {"root": rel_root, "source": source, "n_clips": len(rows),
                                          "split_counts": counts, "subset_of": {"fingerprint": fingerprint, **how}})
    logger.info("%s: %d clips of %s (%s) -> %s", src_dir, len(rows), how, counts, out_dir)
    return out_dir


@dataclass
class ColumnSubsetParams:
    """Section ``real_subsets``: the clips of ``dataset_dir`` whose ``column`` (a manifest column,
    or a key of each clip's ``meta`` record: the real corpus's ``family``) is each of ``values``,
    as datasets ``<out_dir>/<value>``. ``max_clips``: split -> at most that many
    clips, drawn with ``seed`` (a split left out keeps all; the reduced study caps train and
    val so that the pretrained encoders embed fewer clips)."""

    dataset_dir: str = "data/real_corpus"
    out_dir: str = "data/real_subsets"
    column: str = "family"
    values: list[str] = field(default_factory=lambda: ["speech", "instruments", "effects"])
    max_clips: dict[str, int] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        stray = sorted(set(self.max_clips) - set(SPLITS))
        if stray:
            raise ValueError(f"max_clips: {stray} are not splits {list(SPLITS)}")
        if any(n < 1 for n in self.max_clips.values()):
            raise ValueError(f"max_clips: expected positive counts, found {self.max_clips}")
        if not self.values or len(set(self.values)) != len(self.values):
            raise ValueError(f"values: expected at least one value and no repeats, found {self.values}")


def column_subsets(params: ColumnSubsetParams) -> list[Path]:
    """Stage ``real_subsets``: one subset dataset per value of ``params.values`` (see
    :class:`ColumnSubsetParams`); the manifest's row order is kept within each split.

    Raises:
        InputError: when the dataset has no such column, a value matches no clip, or a split of
            a subset would be empty.
    """
    # The parent is read and fingerprinted once, not once per subset.
    ds = load_dataset(params.dataset_dir)
    fingerprint, source = dataset_fingerprint(params.dataset_dir), ds_source(params.dataset_dir)
    column = _column(ds.manifest, params.column, params.dataset_dir)
    found = sorted(column.unique())
    missing = [v for v in params.values if v not in found]
    if missing:
        raise InputError(f"{params.dataset_dir}: no clip has {params.column} {missing}; values are {found}")
    out = []
    for value in params.values:
        rows = ds.manifest[column == value]
        parts = []
        for split in SPLITS:
            part = rows[rows["split"] == split]
            cap = params.max_clips.get(split)
            if cap is not None and len(part) > cap:
                part = part.sample(n=cap, random_state=params.seed).sort_index()
            parts.append(part)
        picked = pd.concat(parts).sort_index().reset_index(drop=True)
        out.append(_write_subset(params.dataset_dir, picked, Path(params.out_dir) / value, source,
                                 {"column": params.column, "value": value, "max_clips": params.max_clips,
                                  "seed": params.seed}, root=ds.root, fingerprint=fingerprint))
    return out


def _column(manifest: pd.DataFrame, name: str, where: str | Path) -> pd.Series:
    """Each clip's ``name`` as text: the manifest column, else the key of its ``meta`` record."""
    if name in manifest.columns:
        return manifest[name].astype(str)
    metas = manifest["meta"] if "meta" in manifest.columns else pd.Series([{}] * len(manifest))
    values = metas.map(lambda m: m.get(name) if isinstance(m, dict) else None)
    if values.isna().all():
        raise InputError(f"{where}: no column {name!r} in its manifest and no {name!r} in its clips' meta; "
                         f"columns are {sorted(manifest.columns)}")
    return values.astype(str)


def ds_source(dataset_dir: str | Path) -> str:
    """The ``source`` recorded in a prepared dataset's ``dataset.json`` (``synthetic`` for the corpus)."""
    return str(read_json(Path(dataset_dir) / "dataset.json").get("source", ""))
