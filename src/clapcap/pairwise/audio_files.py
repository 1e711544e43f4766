"""The audio files the rating page may serve: those of the pairs file, under one root.

The audio root is ``--audio-root`` when given, else the deepest folder that holds every
audio file the pairs file lists (taken as written, before any symbolic link is
resolved). Each file is resolved (:meth:`pathlib.Path.resolve`, links followed) and must
lie under the resolved root: a listed file that is a link to a file elsewhere (``audio/
clip.wav -> /home/me/.ssh/id_rsa``) is refused when the server starts, and the server
checks again before each answer, in case a link was planted after the start.
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


def is_under(path: str | Path, root: Path) -> bool:
    """True when ``path``, links resolved, is an existing file under the (resolved) ``root``."""
    real = Path(path).resolve()
    return real.is_file() and real.is_relative_to(root)


def audio_files(pairs: pd.DataFrame, audio_root: str | Path | None = None
                ) -> tuple[Path | None, dict[str, Path]]:
    """The resolved audio root and ``{clip_id: resolved audio file}`` of a pairs table.

    Clips without an ``audio_path`` get no entry (and the root is None when none has one).

    Raises:
        FileNotFoundError: when ``audio_root`` is not a folder.
        RatingsError: naming the pairs file row, when an audio file resolves (through a
            symbolic link) to a place outside the audio root, or does not exist.
    """
    listed = [(i, c, p) for i, (c, p) in enumerate(zip(pairs["clip_id"], pairs["audio_path"],
                                                       strict=True)) if p]
    if not listed:
        return None, {}
    root = Path(audio_root) if audio_root else default_root([p for _, _, p in listed])
    if not root.is_dir():
        raise FileNotFoundError(f"audio root {root} is not a folder")
    real_root = root.resolve()
    origin = pairs.attrs.get("origin", "pairs file")
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
