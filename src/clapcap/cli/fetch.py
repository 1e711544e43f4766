"""`clapcap data fetch`: download and cut the audio of AudioCaps and MusicCaps CSVs."""

from __future__ import annotations

import argparse
from pathlib import Path

from clapcap.cli._common import add_command


def _fetch(args: argparse.Namespace) -> int:
    from clapcap.data.fetch import FetchOptions, fetch_audio
    from clapcap.errors import ClapcapError

    options = FetchOptions(url_template=args.url_template, audio_format=args.audio_format,
                           sample_rate=args.sample_rate, channels=args.channels, jobs=args.jobs,
                           max_clips=args.max_clips, retries=args.retries, socket_timeout=args.socket_timeout,
                           rate_limit=args.rate_limit, sleep_s=args.sleep, cookies=args.cookies,
                           retry_unavailable=args.retry_unavailable)
    root = Path(args.root) if args.root else Path(args.csv[0]).parent
    report = fetch_audio(args.csv, root / args.audio_dir, options=options, progress=True,
                         report_path=args.report or root / "fetch_report.json")
    print(report.summary())
    failed = [c for c in report.clips if c["status"] == "failed"]
    if failed:
        raise ClapcapError(f"{len(failed)} of {len(report.clips)} clips failed (first: {failed[0]['id']}: "
                           f"{failed[0]['reason']}); rerun to retry them; report: {report.path}")
    return 0


def add_fetch(group) -> None:
    """Add ``fetch`` to the ``data`` group."""
    p = add_command(group, "fetch", _fetch, "download AudioCaps/MusicCaps audio with yt-dlp and cut each "
                                            "segment with ffmpeg into <root>/<audio-dir>/<id>.<ext> "
                                            "(resumable; exit 0 when only unavailable videos are missing)")
    p.add_argument("csv", nargs="+", help="AudioCaps (youtube_id, start_time) or MusicCaps (ytid, start_s, "
                                          "end_s) CSVs; a clip listed in several is fetched once")
    p.add_argument("--root", default=None, help="dataset folder, as data.external.root (default: the first "
                                                "CSV's folder)")
    p.add_argument("--audio-dir", default="audio", help="sub-folder of --root for the audio, as "
                                                        "data.external.audio_dir")
    p.add_argument("--report", default=None, help="report JSON (default: <root>/fetch_report.json)")
    p.add_argument("--url-template", default="https://www.youtube.com/watch?v={id}",
                   help="URL of a clip, {id} its video id")
    p.add_argument("--audio-format", default="flac", choices=["flac", "wav", "ogg", "mp3"],
                   help="format of the files written")
    p.add_argument("--sample-rate", type=int, default=None, help="resample to this rate (default: the source's)")
    p.add_argument("--channels", type=int, default=None, help="1 for mono (default: the source's)")
    p.add_argument("--jobs", type=int, default=1, help="parallel downloads")
    p.add_argument("--max-clips", type=int, default=None, help="fetch only the first N clips")
    p.add_argument("--retries", type=int, default=3, help="yt-dlp retries per request")
    p.add_argument("--socket-timeout", type=float, default=30.0, help="yt-dlp socket timeout in seconds")
    p.add_argument("--rate-limit", type=int, default=None, help="yt-dlp download rate limit in bytes/s")
    p.add_argument("--sleep", type=float, default=0.0, help="seconds yt-dlp sleeps before each download")
    p.add_argument("--cookies", default=None, help="Netscape cookie file for yt-dlp")
    p.add_argument("--retry-unavailable", action="store_true",
                   help="ask again for the videos the previous report found unavailable")
