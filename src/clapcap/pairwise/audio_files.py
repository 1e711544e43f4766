"""The audio files the rating page may serve: those of the pairs file, under one root.

The audio root is ``--audio-root`` when given, else the deepest folder that holds every
audio file the pairs file lists (taken as written, before any symbolic link is
resolved); that folder is never the filesystem root: files that share no other folder
need an explicit ``--audio-root``. Each file is resolved (:meth:`pathlib.Path.resolve`,
links followed) and must lie under the resolved root: a listed file that is a link to a
file elsewhere (``audio/clip.wav -> /home/me/.ssh/id_rsa``) is refused when the server
starts. The resolved files are an allow-list: before each answer the server checks that
the file still resolves to the same place (:func:`still_listed`), so a link planted after
the start leads nowhere, not even to another file under the root.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pandas as pd

from clapcap.data.csv_reader import file_line
from clapcap.pairwise.ratings import RatingsError

logger = logging.getLogger(__name__)


def default_root(paths: list[str]) -> Path:
    """The deepest folder holding every file of ``paths`` (absolute, links not resolved)."""
    return Path(os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths]))


def still_listed(real: Path) -> bool:
    """True when ``real`` (a file resolved at the start) is still a file and still resolves to
    itself: no part of its path has been replaced by a link since."""
    return real.resolve() == real and real.is_file()


def _implicit_root(paths: list[str], origin: str) -> Path:
    """:func:`default_root` of ``paths``, refused when it is the filesystem root."""
    root = default_root(paths)
    if root.parent == root:
        other = next((p for p in paths if Path(p).parts[:2] != Path(paths[0]).parts[:2]), paths[0])
        raise RatingsError(f"{origin}: the audio files share no folder but {root} (e.g. {paths[0]} and {other}); "
                           "the rating page does not serve from the filesystem root: pass --audio-root "
                           "with the folder that holds them")
    return root


def audio_files(pairs: pd.DataFrame, audio_root: str | Path | None = None
                ) -> tuple[Path | None, dict[str, Path]]:
    """The resolved audio root and ``{clip_id: resolved audio file}`` of a pairs table.

    Clips without an ``audio_path`` get no entry (and the root is None when none has one).

    Raises:
        FileNotFoundError: when ``audio_root`` is not a folder.
        RatingsError: without ``audio_root``, when the files share no folder but the
            filesystem root; naming the pairs file row, when an audio file resolves (through a
            symbolic link) to a place outside the audio root, or does not exist.
    """
    listed = [(i, c, p) for i, (c, p) in enumerate(zip(pairs["clip_id"], pairs["audio_path"],
                                                       strict=True)) if p]
    if not listed:
        return None, {}
    origin = pairs.attrs.get("origin", "pairs file")
    root = Path(audio_root) if audio_root else _implicit_root([p for _, _, p in listed], origin)
    if not root.is_dir():
        raise FileNotFoundError(f"audio root {root} is not a folder")
    real_root = root.resolve()
    files: dict[str, Path] = {}
    for i, clip, path in listed:
        real = Path(path).resolve()
        if not real.is_relative_to(real_root):
            raise RatingsError(f"{origin}: row {file_line(pairs, i)}: clip {clip!r}: audio file {path} "
                               f"is {real}, outside the audio root {real_root}; the rating page "
                               "serves files under the audio root only (see --audio-root)")
        if not real.is_file():
            raise RatingsError(f"{origin}: row {file_line(pairs, i)}: clip {clip!r}: audio file "
                               f"{path} not found")
        files[clip] = real
    logger.info("serving %d audio file(s) under %s", len(files), real_root)
    return real_root, files
