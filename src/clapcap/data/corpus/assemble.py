"""Assemble the real corpus from the unpacked packages (``make corpus-assets``) into a folder
dataset that ``data.source: folder`` reads (docs/corpus.md, "Assembly").

1. Every reader of this package runs on its package under ``packages_dir``; a missing package
   is an :class:`~clapcap.errors.InputError` naming ``make corpus-assets``.
2. Renders fill the corpus up to ``target_clips``: notes of every pitched GM program from the
   training soundfonts (FluidR3, TimGM6mb), and the avldrums kits; MuseScore's own-sample
   programs are rendered for the cross-source test.
3. Speech is capped at ``max_speech_fraction`` of the final corpus: the speech clips of each
   speech group (a language, a voice) are shuffled with ``seed`` and taken round-robin across
   groups, so the kept speech covers every language.
4. Splits by source, never by file: the ``test_groups`` (groups, or whole packages) are the
   cross-source test set; the other groups go whole to train or val
   (:func:`~clapcap.data.corpus.records.holdout_groups` picks val's groups from each family's
   groups apart, a group's family being that of most of its clips). No group and no audio SHA-256 is in
   two splits (checked; a violation is a :class:`~clapcap.errors.ClapcapError`).
5. Written into ``<out_dir>.tmp`` and renamed when complete: ``audio/<package>/...`` (zip
   members extracted, renders as WAV), ``metadata.csv`` (``file_name``, ``caption_1..N``,
   ``split``, ``labels`` ``;``-separated), ``sources.csv`` (one row per clip: package, version,
   path, member, licence, copyright, sha256, is_render, render, family, group, transcript,
   language) and ``report.json`` (clips per split, family, package; renders; speech fraction;
   the files that do not decode, left out); and the project's prepared format
   (``manifest.csv``, ``dataset.json``: docs/data.md), so ``load_dataset`` reads it.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import shutil
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
import soundfile as sf
from tqdm import tqdm

from clapcap.data.corpus.asterisk import asterisk_clips
from clapcap.data.corpus.drumfont import render_kit
from clapcap.data.corpus.games import (
    hedgewars_clips,
    megaglest_clips,
    openarena_clips,
    ufoai_clips,
    zero_ad_clips,
)
from clapcap.data.corpus.hydrogen import hydrogen_clips
from clapcap.data.corpus.records import ClipRecord, audio_bytes, holdout_groups
from clapcap.data.corpus.samples import lmms_clips, sonic_pi_clips
from clapcap.data.corpus.soundfont import (
    GM_INSTRUMENTS,
    RenderedClip,
    musescore_programs,
    render_program,
)
from clapcap.data.corpus.tuxpaint import tuxpaint_clips
from clapcap.data.manifest import write_manifest
from clapcap.errors import ClapcapError, InputError

logger = logging.getLogger(__name__)

FLUID = ("fluid-soundfont-gm", "usr/share/sounds/sf2/FluidR3_GM.sf2")
TIMGM = ("timgm6mb-soundfont", "usr/share/sounds/sf2/TimGM6mb.sf2")
MUSESCORE = ("musescore-general-soundfont", "usr/share/sounds/sf3/MuseScore_General_Full.sf3")
AVLDRUMS = ("avldrums.lv2-soundfont", ("usr/share/sounds/sf2/Red_Zeppelin_4_LV2.sf2",
                                       "usr/share/sounds/sf2/Black_Pearl_4_LV2.sf2"))

# Package -> reader of its unpacked folder (renders are made by _renders).
READERS: dict[str, Callable[[Path], list[ClipRecord]]] = {
    "tuxpaint-stamps-default": lambda d: tuxpaint_clips(d / "tuxpaint-stamps-default"),
    "hydrogen-drumkits": lambda d: hydrogen_clips(d / "hydrogen-drumkits"),
    "hydrogen-drumkits-effects": lambda d: hydrogen_clips(d / "hydrogen-drumkits-effects", "hydrogen-drumkits-effects"),
    "ufoai-sound": lambda d: ufoai_clips(d / "ufoai-sound"),
    "hedgewars-data": lambda d: hedgewars_clips(d / "hedgewars-data"),
    "0ad-data": lambda d: zero_ad_clips(d / "0ad-data"),
    "openarena-data": lambda d: openarena_clips(d / "openarena-data"),
    "megaglest-data": lambda d: megaglest_clips(d / "megaglest-data"),
    "sonic-pi-samples": lambda d: sonic_pi_clips(d / "sonic-pi-samples"),
    "lmms-common": lambda d: lmms_clips(d / "lmms-common"),
    "asterisk-core-sounds-en-wav": lambda d: asterisk_clips(d / "asterisk-core-sounds-en-wav",
                                                            d / "asterisk-core-sounds-en"),
}


@dataclass
class CorpusParams:
    """How the real corpus is assembled (module docstring).

    Attributes:
        packages: the packages read (default: every reader's and the four soundfonts).
        test_groups: groups or whole packages that form the cross-source test set.
        render_notes / render_velocities: the notes of each training-soundfont program.
        musescore_notes: the notes of each MuseScore own-sample program (test only).
        min_duration_s / max_duration_s: the limits the validation suite checks (not a filter).
    """

    packages_dir: str = ".assets/corpus"
    out_dir: str = "data/real_corpus"
    target_clips: int = 8000
    max_speech_fraction: float = 0.30
    val_fraction: float = 0.1
    seed: int = 0
    packages: list[str] = field(default_factory=lambda: [*READERS, FLUID[0], TIMGM[0], MUSESCORE[0], AVLDRUMS[0]])
    test_groups: list[str] = field(default_factory=lambda: [
        MUSESCORE[0], "tuxpaint-stamps-default/effects", "megaglest-data", "sonic-pi-samples",
        "asterisk-core-sounds-en-wav"])
    render_notes: list[int] = field(default_factory=lambda: list(range(36, 97, 6)))
    render_velocities: list[int] = field(default_factory=lambda: [45, 100])
    musescore_notes: list[int] = field(default_factory=lambda: [48, 60, 72])
    drum_velocities: list[int] = field(default_factory=lambda: [30, 70, 110])
    min_duration_s: float = 0.01
    max_duration_s: float = 200.0

    def __post_init__(self) -> None:
        if not 0 <= self.max_speech_fraction < 1 or not 0 < self.val_fraction < 1 or self.target_clips < 1:
            raise ValueError("corpus: max_speech_fraction in [0, 1), val_fraction in (0, 1), target_clips >= 1; "
                             f"found {self.max_speech_fraction}, {self.val_fraction}, {self.target_clips}")
        known = {*READERS, FLUID[0], TIMGM[0], MUSESCORE[0], AVLDRUMS[0]}
        stray = sorted(set(self.packages) - known)
        if stray:
            raise ValueError(f"corpus.packages: no reader for {stray}; known: {sorted(known)}")


def _root(params: CorpusParams, package: str) -> Path:
    root = Path(params.packages_dir) / package
    if not root.is_dir():
        raise InputError(f"{root}: package {package} is not unpacked; run `make corpus-assets` "
                         f"(clapcap assets corpus-packages --dest {params.packages_dir})")
    return root


def _program_renders(params: CorpusParams, source: tuple[str, str], programs: list[int], notes: list[int],
                     velocities: list[int], skipped: Counter) -> list[RenderedClip]:
    package, soundfont = source
    root = _root(params, package)
    out: list[RenderedClip] = []
    for program in tqdm(programs, desc=f"render {package}", unit="program", leave=False):
        try:
            out += render_program(root, package, soundfont, program, notes=notes, velocities=velocities)
        except InputError as err:  # a program the soundfont lacks, or a silent note
            skipped[f"{package}: {err}"[:160]] += 1
    return out


def _renders(params: CorpusParams, wanted: int, skipped: Counter) -> list[RenderedClip]:
    """Test renders (MuseScore), drum kits, then training-soundfont programs until ``wanted``
    renders in all."""
    renders: list[RenderedClip] = []
    if MUSESCORE[0] in params.packages:
        programs = musescore_programs(_root(params, MUSESCORE[0]))
        renders += _program_renders(params, MUSESCORE, programs, params.musescore_notes, [80], skipped)
    if AVLDRUMS[0] in params.packages:
        root = _root(params, AVLDRUMS[0])
        for kit in AVLDRUMS[1]:
            renders += render_kit(root, AVLDRUMS[0], kit, velocities=params.drum_velocities)
    sources = [s for s in (FLUID, TIMGM) if s[0] in params.packages]
    per_program = len(params.render_notes) * len(params.render_velocities)
    need = max(0, wanted - len(renders))
    if sources and need:
        programs = sorted(GM_INSTRUMENTS)
        # Programs are spread over the soundfonts in turn, drawn evenly across the GM families; a
        # quarter more than needed, since a program with a silent note is skipped whole, and the
        # renders past the target are dropped.
        n_programs = min(len(programs) * len(sources), -(-need * 5 // (4 * per_program)))
        picks = np.linspace(0, len(programs) * len(sources) - 1, n_programs).round().astype(int)
        trained: list[RenderedClip] = []
        for i, source in enumerate(sources):
            mine = sorted({programs[p // len(sources)] for p in picks if p % len(sources) == i})
            trained += _program_renders(params, source, mine, params.render_notes, params.render_velocities, skipped)
        # Keep whole programs, interleaving the soundfonts, until the target is met.
        by_program: dict[str, list[RenderedClip]] = defaultdict(list)
        for clip in trained:
            by_program[f"{clip.record.package} {clip.record.render.split(' note ')[0]}"].append(clip)
        for key in sorted(by_program, key=lambda k: (int(k.rsplit(" ", 1)[1]), k)):
            if need <= 0:
                break
            renders += by_program[key][:need]
            need -= len(by_program[key][:need])
    return renders


def _cap_speech(records: list[ClipRecord], allowed: int, seed: int) -> list[ClipRecord]:
    """``allowed`` speech clips, round-robin over the speech groups (each shuffled with ``seed``)."""
    by_group: dict[str, list[ClipRecord]] = defaultdict(list)
    for r in records:
        by_group[r.group].append(r)
    rng = np.random.default_rng(seed)
    queues = []
    for group in sorted(by_group):
        clips = sorted(by_group[group], key=lambda r: (r.path, r.member or ""))
        queues.append([clips[i] for i in rng.permutation(len(clips))])
    kept: list[ClipRecord] = []
    depth = 0
    while len(kept) < allowed and any(depth < len(q) for q in queues):
        kept += [q[depth] for q in queues if depth < len(q)][: allowed - len(kept)]
        depth += 1
    return kept


def _in_test(record: ClipRecord, test_groups: list[str]) -> bool:
    return record.group in test_groups or record.package in test_groups


def _family_of_groups(records: list[ClipRecord]) -> dict[str, str]:
    """Each group's family: the most common family of its clips (ties: the first in name order)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for r in records:
        counts[r.group][r.family] += 1
    return {g: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for g, c in counts.items()}


def _assign_splits(records: list[ClipRecord], params: CorpusParams) -> list[str]:
    rest = [r for r in records if not _in_test(r, params.test_groups)]
    # Stratified by family: each family's groups are split on their own, so val holds effects,
    # instruments, drums and speech whenever a family has groups enough (one split over all
    # groups sent no effect or instrument group to val: docs/corpus.md).
    family = _family_of_groups(rest)
    val: set[str] = set()
    for fam in sorted(set(family.values())):
        val |= holdout_groups([r for r in rest if family[r.group] == fam], params.val_fraction, params.seed)
    chosen = {r.group: "val" if r.group in val else "train" for r in rest}
    splits = ["test" if _in_test(r, params.test_groups) else chosen[r.group] for r in records]
    seen: dict[str, set[str]] = defaultdict(set)
    for key_of in (lambda r: f"group {r.group}", lambda r: f"audio {r.sha256}"):
        seen.clear()
        for r, split in zip(records, splits, strict=True):
            seen[key_of(r)].add(split)
        both = sorted(k for k, v in seen.items() if len(v) > 1)
        if both:
            raise ClapcapError(f"corpus: {len(both)} source(s) or audio in two splits, first {both[0]} in "
                               f"{sorted(seen[both[0]])}; a test group shares audio with a training group")
    return splits


def _file_name(record: ClipRecord, taken: set[str]) -> str:
    if record.is_render:
        stem = (PurePosixPath(record.path).stem + "/" + (record.render or "").replace(" ", "_"))
        name = f"audio/{record.package}/{stem}.wav"
    else:
        inner = record.member or record.path
        name = f"audio/{record.package}/{inner}"
    base, n = name, 1
    while name in taken:  # one file listed twice by a reader (never expected): keep both
        n += 1
        name = f"{PurePosixPath(base).with_suffix('')}_{n}{PurePosixPath(base).suffix}"
    taken.add(name)
    return name


class _PackagedAudio:
    """The audio bytes of packaged records; each zip archive is opened once (0 A.D.'s
    ``public.zip`` is 3.3 GB: reopening it per clip read 8 clips/s)."""

    def __init__(self, packages_dir: Path) -> None:
        self.packages_dir = packages_dir
        self.archives: dict[Path, zipfile.ZipFile] = {}

    def bytes_of(self, r: ClipRecord) -> bytes:
        root = self.packages_dir / r.package
        if r.member is None:
            return audio_bytes(root, r)
        if root / r.path not in self.archives:
            self.archives[root / r.path] = zipfile.ZipFile(root / r.path)
        return self.archives[root / r.path].read(r.member)

    def close(self) -> None:
        for archive in self.archives.values():
            archive.close()


def build_corpus(params: CorpusParams) -> dict:
    """Assemble the corpus (module docstring) and write it atomically to ``params.out_dir``.

    Returns:
        The report written to ``report.json``.

    Raises:
        InputError: a package that is not unpacked under ``packages_dir``.
        ClapcapError: a source or audio hash that would be in two splits.
    """
    skipped: Counter = Counter()
    packaged: list[ClipRecord] = []
    for package in [p for p in params.packages if p in READERS]:
        _root(params, package)
        packaged += READERS[package](Path(params.packages_dir))
    audio = _PackagedAudio(Path(params.packages_dir))
    # A file the package ships broken (lmms-common's kick04.ogg) is left out and listed, before
    # the fill and the speech cap are counted, so both hold on what is written.
    undecodable: dict[str, str] = {}
    decodable = []
    frames_of: dict[int, tuple[int, int]] = {}  # id(record) -> (samples, rate), for the manifest
    for r in tqdm(packaged, desc="decode check", unit="clip"):
        try:
            wave, rate = sf.read(io.BytesIO(audio.bytes_of(r)), frames=-1, dtype="float32")
            frames_of[id(r)] = (len(wave), rate)
            decodable.append(r)
        except (sf.LibsndfileError, RuntimeError, ValueError) as err:
            # Without the in-memory file's repr ("<_io.BytesIO object at 0x7f...>"): report.json's
            # bytes must not change from one run to the next.
            undecodable[f"{r.package}:{r.member or r.path}"] = re.sub(r"<_io\.BytesIO object at 0x[0-9a-f]+>",
                                                                       "the file", str(err))[-120:]
    packaged = decodable
    speech = [r for r in packaged if r.family == "speech"]
    other = [r for r in packaged if r.family != "speech"]
    # Renders r so that the target is met with speech at its cap, or with all the speech there is.
    f = params.max_speech_fraction
    wanted = max(round(params.target_clips * (1 - f)) - len(other), params.target_clips - len(other) - len(speech))
    renders = _renders(params, max(0, wanted), skipped)
    wav_of = {id(c.record): c.wav for c in renders}
    non_speech = other + [c.record for c in renders]
    allowed = int(len(non_speech) * params.max_speech_fraction / (1 - params.max_speech_fraction))
    records = non_speech + _cap_speech(speech, allowed, params.seed)
    splits = _assign_splits(records, params)

    out = Path(params.out_dir)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    n_caps = max(len(r.captions) for r in records)
    taken: set[str] = set()
    meta_rows, source_rows, manifest_rows = [], [], []
    kept_records, kept_splits = [], []
    for r, split in tqdm(list(zip(records, splits, strict=True)), desc="write corpus", unit="clip"):
        name = _file_name(r, taken)
        data = wav_of[id(r)] if r.is_render else audio.bytes_of(r)
        if r.is_render:  # a WAV written here: its header says its length
            info = sf.info(io.BytesIO(data))
            n_samples, rate = info.frames, info.samplerate
        else:
            n_samples, rate = frames_of[id(r)]
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(data)
        caps = list(r.captions) + [""] * (n_caps - len(r.captions))
        meta_rows.append([name, *caps, split, ";".join(r.labels)])
        kept_records.append(r)
        kept_splits.append(split)
        source_rows.append({"file_name": name, **{k: v for k, v in asdict(r).items()
                                                   if k not in ("captions", "labels")}})
        manifest_rows.append({"clip_id": name.removeprefix("audio/"), "audio_path": name,
                              "duration_s": round(n_samples / rate, 4), "sample_rate": int(rate),
                              "split": split, "source": r.package, "captions": list(r.captions),
                              "is_audioset_eval": None, "labels": list(r.labels),
                              "meta": {"family": r.family, "group": r.group, "sha256": r.sha256,
                                       "is_render": r.is_render, "licence": r.licence}})
    audio.close()
    with open(tmp / "metadata.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["file_name", *[f"caption_{i + 1}" for i in range(n_caps)], "split", "labels"])
        writer.writerows(meta_rows)
    with open(tmp / "sources.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(source_rows[0]))
        writer.writeheader()
        writer.writerows(source_rows)
    report = {**_report(kept_records, kept_splits, skipped, params), "undecodable": undecodable}
    (tmp / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    # The project's prepared format too (data/manifest.py), so load_dataset, the validation suite
    # and the retrieval code read the corpus as they read every dataset.
    write_manifest(pd.DataFrame(manifest_rows), tmp / "manifest.csv")
    (tmp / "dataset.json").write_text(json.dumps(
        {"root": ".", "source": "real_corpus", "n_clips": len(manifest_rows),
         "total_seconds": round(sum(m["duration_s"] for m in manifest_rows), 1)}, indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    logger.info("real corpus: %d clips (%s), %d undecodable left out -> %s", len(kept_records),
                report["clips_per_split"], len(undecodable), out)
    return report


def _report(records: list[ClipRecord], splits: list[str], skipped: Counter, params: CorpusParams) -> dict:
    per_split: dict[str, Counter] = defaultdict(Counter)
    for r, s in zip(records, splits, strict=True):
        per_split[s][r.family] += 1
    n_speech = sum(r.family == "speech" for r in records)
    return {
        "clips": len(records),
        "clips_per_split": {s: sum(c.values()) for s, c in sorted(per_split.items())},
        "families_per_split": {s: dict(sorted(c.items())) for s, c in sorted(per_split.items())},
        "groups_per_split": {s: len({r.group for r, t in zip(records, splits, strict=True) if t == s})
                             for s in sorted(per_split)},
        "clips_per_package": dict(sorted(Counter(r.package for r in records).items())),
        "renders": sum(r.is_render for r in records),
        "recordings": sum(not r.is_render for r in records),
        "speech_fraction": round(n_speech / len(records), 4),
        "max_speech_fraction": params.max_speech_fraction,
        "test_groups": params.test_groups,
        "skipped_renders": dict(skipped),
    }
