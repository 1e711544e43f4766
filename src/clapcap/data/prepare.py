"""The ``prepare_data`` step: build one manifest (plus audio for the synthetic corpus).

Output folder layout (``out_dir``)::

    manifest.csv     the manifest (see clapcap.data.manifest)
    dataset.json     root of the audio paths, source, split counts, skipped files, and
                     ``build``: what built it (hashes of the ``data`` params, of the input
                     listing and of manifest.csv), which ``validate`` checks
    inputs.json      real sources only: ``data.external``'s ``csv`` and ``audio_dir`` and the
                     listing itself (path, size, SHA-256 of each input file), so that a step
                     given only this folder (embed) checks its inputs as ``validate`` does and
                     both name the files that changed (:func:`check_inputs`)
    audio/           synthetic clips (synthetic source only)
    real/            copied real recordings (when include_real_audio)
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from clapcap.data.audio import LoadReport
from clapcap.data.config import DataParams, ExternalSource
from clapcap.data.listing import build_listing, listing_changes, listing_digest
from clapcap.data.manifest import ManifestError, read_manifest, resolve_audio_path, write_manifest
from clapcap.data.readers import READERS, ROWS_ATTR, AudioLimits
from clapcap.data.real import read_ovos_animals
from clapcap.data.splits import apply_splits, split_by_flag
from clapcap.data.synth import generate_corpus
from clapcap.errors import InputError
from clapcap.utils.io import prepared_dataset_hash, read_json, sha256_file, sha256_json, write_json

logger = logging.getLogger(__name__)

# ``data`` keys that do not change what prepare builds: where it goes, and the audio limits,
# which (with on_error: raise, or for the synthetic corpus) only decide whether it fails.
_NOT_BUILD_INPUTS = ("out_dir", "min_duration_s", "max_duration_s", "allowed_sample_rates")
INPUTS_FILE = "inputs.json"
_RERUN = "rerun prepare (`dvc repro prepare_data` or `clapcap data prepare`)"
_NAMED = 10  # changed files a message names


class StaleDatasetError(InputError, ValueError):
    """A prepared folder was not built from the current params or input files."""


@dataclass
class Dataset:
    """A prepared dataset: its manifest and the root its audio paths are relative to."""

    manifest: pd.DataFrame
    root: Path

    def audio_path(self, clip_id: str) -> Path:

        row = self.manifest.loc[self.manifest["clip_id"] == clip_id]
        if row.empty:
            raise KeyError(f"clip {clip_id!r} not in manifest")
        return resolve_audio_path(self.root, row["audio_path"].iat[0])

    def split(self, name: str) -> pd.DataFrame:
        return self.manifest[self.manifest["split"] == name].reset_index(drop=True)

    def references(self, split: str = "test") -> dict[str, list[str]]:
        """Clip id -> its reference captions, for every clip of ``split``."""
        df = self.split(split)
        return {str(c): list(caps) for c, caps in zip(df["clip_id"], df["captions"], strict=True)}


def load_dataset(out_dir: str | Path) -> Dataset:
    """Load a prepared dataset folder (``manifest.csv`` + ``dataset.json``)."""
    out_dir = Path(out_dir)
    info = read_json(out_dir / "dataset.json")
    return Dataset(read_manifest(out_dir / "manifest.csv"), _dataset_root(out_dir, info))


def _dataset_root(out_dir: Path, info: dict) -> Path:
    """The audio root ``dataset.json`` (read as ``info``) records, resolved against ``out_dir``."""
    root = Path(info["root"])
    return root if root.is_absolute() else (out_dir / root).resolve()


def _read_external(params: DataParams) -> tuple[pd.DataFrame, LoadReport, Path]:
    """Read every CSV of ``data.external``, checking the audio limits as ``on_error`` says.

    Raises:
        ManifestError: naming both CSV rows of a clip listed in two splits' CSVs.
    """
    ext = params.external
    if not ext.root or not ext.csv:
        raise ValueError(f"data.source={params.source} needs data.external.root and data.external.csv")
    root = Path(ext.root).expanduser().resolve()
    reader = READERS[params.source]
    limits = AudioLimits(params.min_duration_s, params.max_duration_s, tuple(params.allowed_sample_rates))
    frames, report = [], LoadReport()
    for split, csv in ext.csv.items():
        kwargs = {"split": "train" if split == "all" else split, "on_error": params.on_error, "limits": limits}
        if params.source != "folder":
            kwargs["audio_dir"] = ext.audio_dir
        df, rep = reader(root, root / csv, **kwargs)
        frames.append(df)
        report.skipped += [{**s, "path": _relative_to(s["path"], root)} for s in rep.skipped]
    _check_one_split_per_clip(frames)
    df = pd.concat(frames, ignore_index=True)
    if params.split_by == "is_audioset_eval":
        df = split_by_flag(df, "is_audioset_eval", params.split_fractions, params.split_seed)
    elif "all" in ext.csv:
        df = apply_splits(df, params.split_fractions, params.split_seed)
    return df, report, root


def _check_one_split_per_clip(frames: list[pd.DataFrame]) -> None:
    """Refuse a clip that two splits' CSVs list (it would be trained and tested on)."""
    seen: dict[str, tuple[str, str]] = {}
    for df in frames:
        for clip_id, split, where in zip(df["clip_id"], df["split"], df.attrs[ROWS_ATTR], strict=True):
            first = seen.setdefault(clip_id, (split, where))
            if first != (split, where):
                raise ManifestError(f"{where}: clip {clip_id!r} (split {split}) is also listed in "
                                    f"{first[1]} (split {first[0]}); a clip belongs to one split")


def _relative_to(path: str, root: Path) -> str:
    """``path`` relative to ``root`` (POSIX) when it lies under it, so no absolute path is recorded."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def _recorded_root(params: DataParams, root: Path, out_dir: Path) -> str:
    """The audio root as ``dataset.json`` records it: relative to ``out_dir`` unless the params
    name an absolute root, so the output holds no absolute path the params did not."""
    if params.source == "synthetic" or Path(params.external.root).expanduser().is_absolute():
        return str(root)
    return Path(os.path.relpath(root, out_dir.resolve())).as_posix()


def _add_real_audio(df: pd.DataFrame, out_dir: Path) -> pd.DataFrame:

    real, _, src_root = read_ovos_animals(split="test")
    (out_dir / "real").mkdir(parents=True, exist_ok=True)
    for rel in real["audio_path"]:
        shutil.copyfile(src_root / rel, out_dir / "real" / rel)
    real["audio_path"] = "real/" + real["audio_path"]
    return pd.concat([df, real], ignore_index=True)


def params_digest(params: DataParams) -> str:
    """SHA-256 of the ``data`` params as parsed (defaults filled in), leaving out the keys that
    do not change what prepare builds: ``out_dir``, and the audio limits unless a real source
    skips the clips out of them (``on_error: skip``)."""
    skips = params.source != "synthetic" and params.on_error == "skip"
    left_out = ("out_dir",) if skips else _NOT_BUILD_INPUTS
    fields = {k: v for k, v in dataclasses.asdict(params).items() if k not in left_out}
    if fields.get("split_by") == "fractions":  # the default: builds from before the key digest alike
        del fields["split_by"]
    return sha256_json(fields)


def prepare_data(params: DataParams, *, progress: bool = True, memo_path: str | Path | None = None) -> Path:
    """Build the manifest for ``params.source`` under ``params.out_dir``.

    An earlier ``manifest.csv`` and ``dataset.json`` are removed first, and ``dataset.json``
    (with its build record) is written last, so a failed run never leaves a manifest that
    looks valid. ``memo_path`` is the listing's hash memo (:mod:`clapcap.data.listing`).

    Returns:
        The path of the written manifest.

    Raises:
        ValueError / AudioError / ManifestError: on bad configuration or bad input files
            (for a real source: an audio file whose duration or sample rate is outside
            ``data.min_duration_s``/``max_duration_s``/``allowed_sample_rates`` unless
            ``on_error: skip`` lists it in ``dataset.json``; a clip in two splits' CSVs).
        FileNotFoundError: naming a missing dataset root or metadata CSV.
    """
    out_dir = Path(params.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("dataset.json", "manifest.csv", INPUTS_FILE):
        (out_dir / stale).unlink(missing_ok=True)
    listing = build_listing(params, memo_path=memo_path)
    if params.source == "synthetic":
        df = generate_corpus(params.synthetic, out_dir, progress=progress)
        df = apply_splits(df, params.split_fractions, params.split_seed)
        report, root = LoadReport(), Path(".")
    else:
        df, report, root = _read_external(params)
    if params.include_real_audio:
        if params.source != "synthetic":
            raise ValueError("include_real_audio is only supported with the synthetic source")
        df = _add_real_audio(df, out_dir)
    manifest = write_manifest(df, out_dir / "manifest.csv")
    if params.source != "synthetic":  # the synthetic corpus lists no input file
        write_json(out_dir / INPUTS_FILE, {"csv": params.external.csv, "audio_dir": params.external.audio_dir,
                                           "listing": listing}, indent=0)
    counts = df["split"].value_counts().to_dict()
    build = {"params_sha256": params_digest(params), "listing_sha256": listing_digest(listing),
             "manifest_sha256": sha256_file(manifest)}
    write_json(out_dir / "dataset.json", {"root": _recorded_root(params, root, out_dir), "source": params.source,
                                          "n_clips": len(df), "split_counts": counts,
                                          "skipped": report.skipped, "build": build})
    logger.info("manifest %s: %d clips %s, %d skipped", manifest, len(df), counts, len(report.skipped))
    return manifest


def check_build(params: DataParams, *, memo_path: str | Path | None = None) -> None:
    """Check that ``params.out_dir`` was built from ``params`` and the current input files.

    Raises:
        StaleDatasetError: naming ``dataset.json`` and what differs (params, input files or
            manifest), with the advice to rerun prepare.
    """
    path = Path(params.out_dir) / "dataset.json"
    if not path.is_file():
        raise StaleDatasetError(f"{path}: not found (no finished prepare in {params.out_dir}): {_RERUN}")
    build = read_json(path).get("build")
    if not isinstance(build, dict):
        raise StaleDatasetError(f"{path} records no build (written by an older clapcap or another tool): {_RERUN}")
    if build.get("params_sha256") != params_digest(params):
        raise StaleDatasetError(f"{path} was built from other params than the current `data` section: {_RERUN}")
    _check_listing(path, build, params, memo_path)
    manifest = Path(params.out_dir) / "manifest.csv"
    if not manifest.is_file() or build.get("manifest_sha256") != sha256_file(manifest):
        raise StaleDatasetError(f"{manifest} is missing or is not the manifest {path} records: {_RERUN}")


def check_inputs(dataset_dir: str | Path, *, memo_path: str | Path | None = None) -> None:
    """Check that a prepared real dataset's input files are those it was built from: the listing
    check of :func:`check_build` (the same listing, hashed alike), from the folder alone (its
    ``inputs.json``), for the steps given a dataset folder and no params (embed).

    A synthetic dataset (its audio is prepare's own output) and a folder that no prepare built
    (no ``build`` record, as the real benchmark's) have no input files to check. ``memo_path``
    is the listing's hash memo: with it, unchanged files are only stat'ed.

    Raises:
        StaleDatasetError: naming the metadata CSVs and audio files changed, removed or added
            since prepare, or a real dataset without ``inputs.json`` (built by an older
            clapcap), with the advice to rerun prepare.
    """
    dataset_dir = Path(dataset_dir)
    path = dataset_dir / "dataset.json"
    info = read_json(path)
    build = info.get("build")
    if info.get("source") == "synthetic" or not isinstance(build, dict):
        return
    recorded = _recorded_inputs(dataset_dir)
    if recorded is None:
        raise StaleDatasetError(f"{path}: no {INPUTS_FILE} (built by an older clapcap), so its input files "
                                f"cannot be checked: {_RERUN}")
    params = DataParams(source=info["source"], external=ExternalSource(
        root=str(_dataset_root(dataset_dir, info)), csv=recorded["csv"], audio_dir=recorded["audio_dir"]))
    _check_listing(path, build, params, memo_path)


def _recorded_inputs(out_dir: Path) -> dict | None:
    """``inputs.json`` of ``out_dir`` (``csv``, ``audio_dir``, ``listing``), or None when absent."""
    try:
        recorded = read_json(out_dir / INPUTS_FILE)
    except (FileNotFoundError, ValueError):
        return None
    return recorded if isinstance(recorded, dict) and {"csv", "audio_dir", "listing"} <= recorded.keys() else None


def _check_listing(path: Path, build: dict, params: DataParams, memo_path: str | Path | None) -> None:
    """Raise StaleDatasetError (naming ``path``, the dataset.json) when the listing of ``params``'s
    input files is not the one ``build`` records, naming the files that differ when
    ``inputs.json`` holds the recorded listing."""
    try:
        listing = build_listing(params, memo_path=memo_path)
    except (FileNotFoundError, ValueError) as err:
        raise StaleDatasetError(f"{path}: cannot list its input files ({err})") from err
    if build.get("listing_sha256") == listing_digest(listing):
        return
    recorded = _recorded_inputs(path.parent)
    changed = listing_changes(recorded["listing"], listing) if recorded else []
    if changed:
        more = f" and {len(changed) - _NAMED} more" if len(changed) > _NAMED else ""
        what = ": " + ", ".join(changed[:_NAMED]) + more
    else:
        what = f" (a metadata CSV or audio file under {params.external.root} changed since)"
    raise StaleDatasetError(f"{path} was built from other input files{what}: {_RERUN}")


def dataset_fingerprint(dataset_dir: str | Path) -> str:
    """SHA-256 of a prepared dataset's content: ``manifest.csv``'s bytes and ``dataset.json``
    without its ``root`` (where the audio is, not what it is; what it is, is in ``build``'s
    listing hash for a real dataset and in the params hash for the synthetic one).

    No path and no mtime enter it, so two copies of one dataset in different folders agree.

    Raises:
        FileNotFoundError: naming ``manifest.csv`` or ``dataset.json`` when missing.
    """
    return prepared_dataset_hash(dataset_dir)
