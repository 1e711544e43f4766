"""Fetch AudioCaps and MusicCaps audio: download each video's audio with yt-dlp and cut
``start_s .. end_s`` with ffmpeg into ``<audio_dir>/<id>.<ext>``, the file the readers
(:func:`~clapcap.data.readers.read_audiocaps`, :func:`~clapcap.data.readers.read_musiccaps`)
look up.

- **Resumable**: a clip whose file (any of ``.wav .flac .mp3 .ogg``) exists and decodes is
  skipped, so a rerun after a crash fetches only the rest. A rerun also takes the
  ``unavailable`` verdicts of the previous report (same URL template) without asking the
  server again, unless ``retry_unavailable``.
- **One row never stops the rest**: a video the server does not have (HTTP 404/410/451, or
  YouTube's removed, private, terminated, blocked, age- or members-only videos) is
  ``unavailable``; any other failure (the network, a bot check, ffmpeg) is ``failed``, with
  its one-line reason, and a rerun tries it again.
- **No half-written file**: the download and the cut go to temporary names beginning with
  :data:`TEMP_PREFIX` in ``audio_dir`` and the cut is renamed into place once it decodes;
  the temporary files a killed run left are removed when the next one starts.

yt-dlp and ffmpeg (the ``imageio-ffmpeg`` wheel's, else ``ffmpeg`` on PATH) are imported or
looked up when a fetch runs, never at import time.
"""

from __future__ import annotations

import glob
import logging
import os
import re
import shutil
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from clapcap.data.audio import AudioError, audio_info
from clapcap.data.fetch_list import FetchClip, read_fetch_list
from clapcap.errors import ConfigError, MissingDependencyError
from clapcap.utils.io import read_json, write_json

logger = logging.getLogger(__name__)

URL_TEMPLATE = "https://www.youtube.com/watch?v={id}"
TEMP_PREFIX = ".fetchtmp-"
REPORT_NAME = "fetch_report.json"
AUDIO_EXTS = (".wav", ".flac", ".mp3", ".ogg")  # the readers' lookup, in their order
INSTALL = "pip install -c requirements/constraints.txt -e '.[fetch]'"
CODECS = {"wav": ["-c:a", "pcm_s16le"], "flac": ["-c:a", "flac"],
          "ogg": ["-c:a", "libvorbis", "-q:a", "6"], "mp3": ["-c:a", "libmp3lame", "-q:a", "2"]}
STATUSES = ("ok", "skipped", "unavailable", "failed")
# What YouTube (and yt-dlp) say of a video that is gone for good, not of a passing failure.
# "Sign in to confirm you're not a bot" is a rate limit: failed, retried on the next run.
_GONE = ("video unavailable", "private video", "has been removed", "this video is not available",
         "no longer available", "account associated", "has been terminated", "copyright",
         "confirm your age", "members-only", "members only", "blocked it", "not made this video available",
         "http error 404", "http error 410")
_GONE_HTTP = (404, 410, 451)
_REPORT_EVERY_S = 30.0


@dataclass(frozen=True)
class FetchOptions:
    """How to fetch. ``url_template`` gets the clip id as ``{id}``; ``audio_format`` is the
    file written; ``sample_rate``/``channels`` None keep the source's. ``retries``,
    ``socket_timeout`` (s), ``rate_limit`` (bytes/s, None: unlimited), ``sleep_s`` (before
    each download) and ``cookies`` (a Netscape cookie file) go to yt-dlp."""

    url_template: str = URL_TEMPLATE
    audio_format: Literal["wav", "flac", "ogg", "mp3"] = "flac"
    sample_rate: int | None = None
    channels: int | None = None
    jobs: int = 1
    max_clips: int | None = None
    retries: int = 3
    socket_timeout: float = 30.0
    rate_limit: int | None = None
    sleep_s: float = 0.0
    cookies: str | None = None
    retry_unavailable: bool = False

    def __post_init__(self) -> None:
        try:
            self.url_template.format(id="x")
        except (KeyError, IndexError, ValueError) as err:
            raise ConfigError(f"url_template {self.url_template!r}: only {{id}} may be filled in ({err})") from err
        if "{id}" not in self.url_template:
            raise ConfigError(f"url_template {self.url_template!r} must contain {{id}}")
        if self.audio_format not in CODECS:
            raise ConfigError(f"audio_format must be one of {sorted(CODECS)}, found {self.audio_format!r}")
        for name in ("sample_rate", "channels", "max_clips", "rate_limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1 (or unset), found {value}")
        if self.jobs < 1 or self.retries < 0 or self.socket_timeout <= 0 or self.sleep_s < 0:
            raise ConfigError("jobs must be >= 1, retries >= 0, socket_timeout > 0 and sleep_s >= 0; found "
                              f"{self.jobs}, {self.retries}, {self.socket_timeout}, {self.sleep_s}")


@dataclass
class FetchReport:
    """What a fetch did: one entry per clip (``id``, ``rows``, ``start_s``, ``end_s``,
    ``status``, ``reason``, ``file``, ``duration_s``) and the counts per status."""

    path: Path
    audio_dir: Path
    clips: list[dict[str, Any]] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {s: sum(c["status"] == s for c in self.clips) for s in STATUSES}

    def summary(self) -> str:
        n = self.counts
        return (f"fetched {n['ok']}, skipped {n['skipped']} (already there), unavailable {n['unavailable']}, "
                f"failed {n['failed']} of {len(self.clips)} clips into {self.audio_dir}; report: {self.path}")


class _RowFailure(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class _YtdlpLog:
    """yt-dlp's messages to our log at DEBUG: its errors reach the report as exceptions."""

    def debug(self, msg: str) -> None:
        logger.debug("yt-dlp: %s", msg)

    info = warning = error = debug


def _import_yt_dlp() -> Any:
    try:
        import yt_dlp
    except ModuleNotFoundError as err:
        raise MissingDependencyError(f"clapcap data fetch needs yt-dlp: {INSTALL}", name="yt_dlp") from err
    return yt_dlp


def ffmpeg_exe() -> str:
    """The ffmpeg binary: the ``imageio-ffmpeg`` wheel's, else ``ffmpeg`` on PATH.

    Raises:
        MissingDependencyError: when neither is there, naming the pip line.
    """
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ModuleNotFoundError, RuntimeError) as err:  # RuntimeError: the wheel has no binary here
        found = shutil.which("ffmpeg")
        if found:
            return found
        raise MissingDependencyError(f"clapcap data fetch needs ffmpeg: {INSTALL} "
                                     f"(or ffmpeg on PATH); {err}", name="imageio_ffmpeg") from err


def clean_temps(audio_dir: str | Path) -> int:
    """Remove the temporary files (:data:`TEMP_PREFIX`) a killed fetch left. Returns how many."""
    stale = [p for p in Path(audio_dir).glob(f"{TEMP_PREFIX}*") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).replace("ERROR: ", "", 1).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _classify(err: Exception) -> _RowFailure:
    cause = getattr(err, "exc_info", None)
    status = getattr(cause[1], "status", None) if cause and cause[1] is not None else None
    reason = _one_line(str(err))
    gone = status in _GONE_HTTP or any(s in reason.lower() for s in _GONE)
    return _RowFailure("unavailable" if gone else "failed", reason)


def _existing(audio_dir: Path, clip_id: str) -> tuple[str | None, list[Path]]:
    """The name of a finished file of ``clip_id`` that decodes, and those that do not."""
    bad = []
    for ext in AUDIO_EXTS:
        path = audio_dir / f"{clip_id}{ext}"
        if not path.exists():
            continue
        try:
            audio_info(path, check_samples=True)
            return path.name, bad
        except AudioError as err:
            logger.warning("%s does not decode (%s): fetching it again", path, err.reason)
            bad.append(path)
    return None, bad


def _download(yt_dlp: Any, url: str, stem: Path, ydl_opts: dict[str, Any]) -> tuple[Path, float | None]:
    """Download ``url`` to ``<stem>.dl.<ext>``. Returns the file and the video's duration."""
    opts = {**ydl_opts, "outtmpl": {"default": f"{stem}.dl.%(ext)s"}}
    try:
        with yt_dlp.YoutubeDL(opts) as ydl:
            info = ydl.extract_info(url, download=True)
    except yt_dlp.utils.YoutubeDLError as err:
        raise _classify(err) from err
    done = [p for p in stem.parent.glob(f"{glob.escape(stem.name)}.dl.*")
            if not p.name.endswith((".part", ".ytdl", ".temp"))]
    if len(done) != 1:
        raise _RowFailure("failed", f"yt-dlp reported success but left {len(done)} files")
    return done[0], (info or {}).get("duration")


def _probe_duration(ffmpeg: str, src: Path) -> float | None:
    """The media's duration in seconds as ffmpeg reads it (the generic extractor gives none)."""
    try:
        proc = subprocess.run([ffmpeg, "-nostdin", "-hide_banner", "-i", str(src)], capture_output=True,
                              text=True, errors="replace", timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return None
    found = re.search(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)", proc.stderr)
    return None if found is None else int(found[1]) * 3600 + int(found[2]) * 60 + float(found[3])


def _cut(ffmpeg: str, src: Path, dst: Path, clip: FetchClip, options: FetchOptions) -> float:
    """Cut ``clip``'s segment of ``src`` into ``dst``. Returns its duration in seconds."""
    cmd = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-ss", f"{clip.start_s:.6f}",
           "-i", str(src), "-t", f"{clip.end_s - clip.start_s:.6f}", "-map", "0:a:0", "-vn",
           *(["-ar", str(options.sample_rate)] if options.sample_rate else []),
           *(["-ac", str(options.channels)] if options.channels else []),
           *CODECS[options.audio_format], str(dst)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600, check=False)
    except subprocess.TimeoutExpired as err:
        raise _RowFailure("failed", "ffmpeg took over 600 s to cut the segment") from err
    if proc.returncode != 0:
        raise _RowFailure("failed", f"ffmpeg exit {proc.returncode}: {_one_line(proc.stderr or 'no message')}")
    try:
        return audio_info(dst, check_samples=True)[0]
    except AudioError as err:
        raise _RowFailure("failed", f"the cut does not decode: {err.reason}") from err


@dataclass(frozen=True)
class _Job:
    audio_dir: Path
    options: FetchOptions
    ydl_opts: dict[str, Any]
    ffmpeg: str
    yt_dlp: Any
    gone_before: dict[str, str]


def _fetch_one(clip: FetchClip, job: _Job) -> dict[str, Any]:
    """Fetch one clip; never raises for the row's own failures. Returns its report entry."""
    entry = {"id": clip.id, "rows": list(clip.rows), "start_s": clip.start_s, "end_s": clip.end_s,
             "status": "skipped", "reason": "", "file": None, "duration_s": None}
    name, bad = _existing(job.audio_dir, clip.id)
    if name is not None:
        return {**entry, "file": name, "reason": "already fetched"}
    if clip.id in job.gone_before:
        return {**entry, "status": "unavailable", "reason": job.gone_before[clip.id]}
    stem = job.audio_dir / f"{TEMP_PREFIX}{clip.id}-{uuid.uuid4().hex[:8]}"
    final = job.audio_dir / f"{clip.id}.{job.options.audio_format}"
    try:
        src, video_s = _download(job.yt_dlp, job.options.url_template.format(id=clip.id), stem, job.ydl_opts)
        video_s = video_s if video_s is not None else _probe_duration(job.ffmpeg, src)
        if video_s is not None and clip.start_s >= video_s:
            raise _RowFailure("unavailable", f"the segment starts at {clip.start_s:g} s, the video is {video_s:g} s long")
        cut = stem.parent / f"{stem.name}.cut.{job.options.audio_format}"
        duration = _cut(job.ffmpeg, src, cut, clip, job.options)
        os.replace(cut, final)
    except _RowFailure as err:
        return {**entry, "status": err.status, "reason": err.reason}
    except OSError as err:  # the disk, not the row: recorded, and the rest still runs
        return {**entry, "status": "failed", "reason": _one_line(f"{type(err).__name__}: {err}")}
    finally:
        for tmp in stem.parent.glob(f"{glob.escape(stem.name)}.*"):
            tmp.unlink(missing_ok=True)
    for old in bad:
        if old != final:
            old.unlink(missing_ok=True)
    return {**entry, "status": "ok", "file": final.name, "duration_s": round(duration, 6)}


def _ydl_options(options: FetchOptions, ffmpeg: str) -> dict[str, Any]:
    opts = {"format": "bestaudio/best", "noplaylist": True, "quiet": True, "no_warnings": True,
            "noprogress": True, "no_color": True, "logger": _YtdlpLog(), "cachedir": False,
            "overwrites": True, "continuedl": False, "updatetime": False, "ffmpeg_location": ffmpeg,
            "retries": options.retries, "extractor_retries": options.retries,
            "fragment_retries": options.retries, "socket_timeout": options.socket_timeout}
    if options.rate_limit:
        opts["ratelimit"] = options.rate_limit
    if options.sleep_s:
        opts["sleep_interval"] = options.sleep_s
    if options.cookies:
        opts["cookiefile"] = options.cookies
    return opts


def _gone_before(report_path: Path, options: FetchOptions) -> dict[str, str]:
    """The ``unavailable`` verdicts of the previous report written with the same URL template."""
    if options.retry_unavailable or not report_path.is_file():
        return {}
    try:
        previous = read_json(report_path)
    except ValueError as err:
        logger.warning("ignoring the previous report: %s", err)
        return {}
    if not isinstance(previous, dict) or previous.get("url_template") != options.url_template:
        return {}
    return {c["id"]: c["reason"] for c in previous.get("clips", [])
            if isinstance(c, dict) and c.get("status") == "unavailable" and "id" in c}


def _write_report(report: FetchReport, head: dict[str, Any], total: int) -> None:
    write_json(report.path, {**head, "complete": len(report.clips) == total, "counts": report.counts,
                             "pending": total - len(report.clips), "clips": report.clips})


def fetch_audio(csv_paths: list[str | Path], audio_dir: str | Path, *, options: FetchOptions | None = None,
                report_path: str | Path | None = None, progress: bool = False) -> FetchReport:
    """Fetch every clip the AudioCaps or MusicCaps CSVs list into ``audio_dir``.

    ``report_path`` (default ``<audio_dir>/../fetch_report.json``) is rewritten atomically
    every 30 s and at the end, the clips in CSV order.

    Returns:
        The :class:`FetchReport`; failed and unavailable rows are in it, not raised.

    Raises:
        ManifestError: for a malformed CSV (naming the file and row), before any download.
        MissingDependencyError: when yt-dlp or ffmpeg is missing.
    """
    options = options or FetchOptions()
    _, clips = read_fetch_list(list(csv_paths))
    clips = clips[: options.max_clips] if options.max_clips else clips
    audio_dir = Path(audio_dir)
    report_path = Path(report_path) if report_path else audio_dir.parent / REPORT_NAME
    ffmpeg = ffmpeg_exe()
    job = _Job(audio_dir, options, _ydl_options(options, ffmpeg), ffmpeg, _import_yt_dlp(),
               _gone_before(report_path, options))
    audio_dir.mkdir(parents=True, exist_ok=True)
    if removed := clean_temps(audio_dir):
        logger.info("removed %d temporary files of an interrupted fetch in %s", removed, audio_dir)
    head = {"csv": [Path(p).name for p in csv_paths], "url_template": options.url_template,
            "audio_format": options.audio_format}
    report, done = FetchReport(report_path, audio_dir), {}
    counts = dict.fromkeys(STATUSES, 0)
    from tqdm.auto import tqdm

    last, pool = time.monotonic(), ThreadPoolExecutor(max_workers=options.jobs)
    try:
        with tqdm(total=len(clips), desc="fetch", unit="clip", disable=not progress) as bar:
            futures = {pool.submit(_fetch_one, clip, job): i for i, clip in enumerate(clips)}
            for future in as_completed(futures):
                entry = done[futures[future]] = future.result()
                counts[entry["status"]] += 1
                bar.update(1)
                bar.set_postfix(counts, refresh=False)
                if time.monotonic() - last > _REPORT_EVERY_S:
                    report.clips = [done[i] for i in sorted(done)]
                    _write_report(report, head, len(clips))
                    last = time.monotonic()
    finally:  # Ctrl-C: no new downloads; the report says what was done
        pool.shutdown(wait=True, cancel_futures=True)
        report.clips = [done[i] for i in sorted(done)]
        _write_report(report, head, len(clips))
    logger.info("%s", report.summary())
    return report


__all__ = ["AUDIO_EXTS", "REPORT_NAME", "TEMP_PREFIX", "URL_TEMPLATE", "FetchOptions", "FetchReport",
           "clean_temps", "fetch_audio", "ffmpeg_exe"]
