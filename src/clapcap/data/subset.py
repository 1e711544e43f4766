"""A subset of a prepared dataset, by its ``source`` column, that shares the parent's audio.

The captioning encoder ablation on music runs on the corpus's music clips only (``source ==
"synthetic_music"``). :func:`subset_dataset` writes a dataset folder holding the filtered
``manifest.csv`` and a ``dataset.json`` whose ``root`` points, relatively, at the parent's
audio root: no audio is copied, and the folder's bytes do not depend on where the repository
lives.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

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
    counts = {split: int((rows["split"] == split).sum()) for split in SPLITS}
    empty = [s for s, n in counts.items() if n == 0]
    if empty:
        raise InputError(f"{src_dir}: the {source!r} subset has no clips in split(s) {empty}: {counts}")
    out_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(rows, out_dir / "manifest.csv")
    root = Path(os.path.relpath(ds.root.resolve(), out_dir.resolve())).as_posix()
    write_json(out_dir / "dataset.json", {"root": root, "source": source, "n_clips": len(rows),
                                          "split_counts": counts,
                                          "subset_of": {"fingerprint": dataset_fingerprint(src_dir), "source": source}})
    logger.info("%s: %d %r clips (%s) -> %s", src_dir, len(rows), source, counts, out_dir)
    return out_dir


def ds_source(dataset_dir: str | Path) -> str:
    """The ``source`` recorded in a prepared dataset's ``dataset.json`` (``synthetic`` for the corpus)."""
    return str(read_json(Path(dataset_dir) / "dataset.json").get("source", ""))
