"""`clapcap data fetch`: the real yt-dlp and ffmpeg against a media server on 127.0.0.1.

The server serves real recordings (WAV, FLAC, Ogg Vorbis written by soundfile) at
``/v/<id>`` with their media type, which yt-dlp's generic extractor takes as a direct media
URL, and answers 404 for ids it does not have. It counts the requests per id, so that a
rerun can be shown to skip finished clips.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clapcap.cli import main as cli_main
from clapcap.data.fetch import TEMP_PREFIX, FetchOptions, fetch_audio
from clapcap.data.manifest import ManifestError
from clapcap.data.readers import read_audiocaps, read_musiccaps
from clapcap.errors import ConfigError, MissingDependencyError

pytest.importorskip("yt_dlp")
pytest.importorskip("imageio_ffmpeg")

REPO_ROOT = Path(__file__).resolve().parents[2]
SR = 16000
SOURCE_S = 20
MEDIA_TYPES = {".wav": "audio/x-wav", ".flac": "audio/flac", ".ogg": "audio/ogg"}
AUDIOCAPS_CSV = ("audiocap_id,youtube_id,start_time,caption\n"
                 "1,aaaaaaaaaaa,3,a dog barks\n"
                 "2,gone0000000,0,a video taken down\n"
                 "3,aaaaaaaaaaa,3,a dog barks twice\n"
                 "4,bbbbbbbbbbb,7.5,rain on a roof\n")
MUSICCAPS_CSV = ("ytid,start_s,end_s,aspect_list,caption,is_audioset_eval,is_balanced_subset\n"
                 "ccccccccccc,4,14,\"['rock']\",a rock song,True,False\n"
                 "ddddddddddd,2.5,7.25,\"['piano']\",solo piano,False,False\n")


class MediaServer:
    """Serves ``<root>/<id>.<ext>`` at ``/v/<id>``; ``stall`` = an id whose second request
    (the download after yt-dlp's probe) sends half the bytes and hangs until ``release``."""

    def __init__(self, root: Path) -> None:
        self.root, self.requests, self.stall = root, Counter(), None
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                clip_id = self.path.rsplit("/", 1)[-1]
                server.requests[clip_id] += 1
                files = sorted(server.root.glob(f"{clip_id}.*"))
                if not files:
                    self.send_error(404)
                    return
                data = files[0].read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", MEDIA_TYPES[files[0].suffix])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if clip_id == server.stall and server.requests[clip_id] >= 2:
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    server.release.wait(60)
                    return
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:
                pass  # yt-dlp's probe closes the connection after the first bytes

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url_template = f"http://127.0.0.1:{self.httpd.server_address[1]}/v/{{id}}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _source(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-0.5, 0.5, SR * SOURCE_S).astype(np.float32)


@pytest.fixture
def media(tmp_path):
    """A server with aaaaaaaaaaa.wav, bbbbbbbbbbb.flac, ccccccccccc.ogg, ddddddddddd.wav
    (20 s, 16 kHz); yields ``(server, {id: samples})``."""
    root = tmp_path / "server"
    root.mkdir()
    sources = {}
    for seed, (clip_id, ext) in enumerate([("aaaaaaaaaaa", "wav"), ("bbbbbbbbbbb", "flac"),
                                           ("ccccccccccc", "ogg"), ("ddddddddddd", "wav")]):
        sources[clip_id] = _source(seed)
        sf.write(root / f"{clip_id}.{ext}", sources[clip_id], SR)
    server = MediaServer(root)
    yield server, sources
    server.close()


def _csvs(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "dataset"
    root.mkdir()
    (root / "train.csv").write_text(AUDIOCAPS_CSV)
    (root / "musiccaps.csv").write_text(MUSICCAPS_CSV)
    return root, root / "train.csv", root / "musiccaps.csv"


def _temps(audio_dir: Path) -> list[str]:
    return sorted(p.name for p in audio_dir.iterdir() if p.name.startswith("."))


def test_fetch_cuts_each_segment_reports_unavailable_and_resumes(tmp_path, media):
    server, sources = media
    root, audiocaps, musiccaps = _csvs(tmp_path)
    audio = root / "audio"
    report = fetch_audio([audiocaps, musiccaps], audio,
                         options=FetchOptions(url_template=server.url_template, jobs=2))

    assert report.counts == {"ok": 4, "skipped": 0, "unavailable": 1, "failed": 0}
    by_id = {c["id"]: c for c in report.clips}
    assert by_id["aaaaaaaaaaa"]["rows"] == ["train.csv: row 2", "train.csv: row 4"]  # two captions, one clip
    assert "404" in by_id["gone0000000"]["reason"]
    for clip_id, start, end in [("aaaaaaaaaaa", 3, 13), ("bbbbbbbbbbb", 7.5, 17.5), ("ccccccccccc", 4, 14),
                                ("ddddddddddd", 2.5, 7.25)]:
        wave, sr = sf.read(audio / f"{clip_id}.flac", dtype="float32")
        assert sr == SR and abs(len(wave) - (end - start) * SR) <= 1024, clip_id  # within one frame
        if clip_id != "ccccccccccc":  # lossless sources: the very samples of the segment
            expected = sources[clip_id][int(start * SR): int(start * SR) + len(wave)]
            assert np.abs(wave - expected).max() < 1e-3, clip_id
    assert _temps(audio) == []
    written = json.loads((root / "fetch_report.json").read_text())
    assert written["complete"] and written["counts"] == report.counts
    assert [c["id"] for c in written["clips"]] == ["aaaaaaaaaaa", "gone0000000", "bbbbbbbbbbb",
                                                   "ccccccccccc", "ddddddddddd"]

    # The readers find the files where they look: only the unavailable clip is missing.
    rows, missing = read_audiocaps(root, audiocaps, on_error="skip")
    assert sorted(rows["clip_id"]) == ["aaaaaaaaaaa", "bbbbbbbbbbb"] and len(missing.skipped) == 1
    assert len(read_musiccaps(root, musiccaps)[0]) == 2

    # A rerun asks the server nothing: finished clips skipped, the 404 taken from the report.
    before = dict(server.requests)
    again = fetch_audio([audiocaps, musiccaps], audio, options=FetchOptions(url_template=server.url_template))
    assert again.counts == {"ok": 0, "skipped": 4, "unavailable": 1, "failed": 0}
    assert dict(server.requests) == before
    retried = fetch_audio([audiocaps], audio, options=FetchOptions(url_template=server.url_template,
                                                                    retry_unavailable=True))
    assert retried.counts["unavailable"] == 1 and server.requests["gone0000000"] > before["gone0000000"]


def test_rerun_cleans_leftover_temps_and_refetches_a_file_that_does_not_decode(tmp_path, media):
    server, sources = media
    root, audiocaps, _ = _csvs(tmp_path)
    audio = root / "audio"
    audio.mkdir()
    (audio / f"{TEMP_PREFIX}aaaaaaaaaaa-0123abcd.dl.wav.part").write_bytes(b"RIFF" + b"\0" * 100)
    (audio / "bbbbbbbbbbb.wav").write_bytes(b"not audio at all")  # e.g. copied by hand, broken
    report = fetch_audio([audiocaps], audio, options=FetchOptions(url_template=server.url_template,
                                                                   audio_format="wav", max_clips=2))
    assert [c["id"] for c in report.clips] == ["aaaaaaaaaaa", "gone0000000"]  # --max-clips
    assert report.counts["ok"] == 1 and _temps(audio) == []
    report = fetch_audio([audiocaps], audio, options=FetchOptions(url_template=server.url_template,
                                                                   audio_format="wav"))
    assert {c["id"]: c["status"] for c in report.clips} == {
        "aaaaaaaaaaa": "skipped", "gone0000000": "unavailable", "bbbbbbbbbbb": "ok"}
    wave, _ = sf.read(audio / "bbbbbbbbbbb.wav", dtype="float32")
    assert len(wave) == 10 * SR


def test_sigkill_mid_download_leaves_no_file_and_a_rerun_finishes(tmp_path, media):
    server, _ = media
    root, audiocaps, _ = _csvs(tmp_path)
    audio = root / "audio"
    server.stall = "bbbbbbbbbbb"  # after aaaaaaaaaaa is done and gone0000000 found missing
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT / "src"),
                                                                  os.environ.get("PYTHONPATH")) if p)}
    cmd = [sys.executable, "-c", "import sys; from clapcap.cli import main; sys.exit(main(sys.argv[1:]))",
           "data", "fetch", str(audiocaps), "--url-template", server.url_template]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not any(
                p.stat().st_size > 0 for p in audio.glob(f"{TEMP_PREFIX}bbbbbbbbbbb-*")):
            time.sleep(0.05)
        assert proc.poll() is None, f"fetch exited {proc.returncode} before the stalled download"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert (audio / "aaaaaaaaaaa.flac").is_file() and not (audio / "bbbbbbbbbbb.flac").exists()
    assert _temps(audio)  # the half download is still there ...

    server.stall = None
    server.release.set()
    first = server.requests["aaaaaaaaaaa"]
    assert cli_main(["data", "fetch", str(audiocaps), "--url-template", server.url_template]) == 0
    assert _temps(audio) == []  # ... and gone after the rerun, which fetched only the rest
    assert server.requests["aaaaaaaaaaa"] == first
    assert sf.info(str(audio / "bbbbbbbbbbb.flac")).frames == 10 * SR


def test_cli_exit_codes_and_summary(tmp_path, media, capsys):
    server, _ = media
    root, audiocaps, _ = _csvs(tmp_path)
    assert cli_main(["data", "fetch", str(audiocaps), "--url-template", server.url_template]) == 0
    out = capsys.readouterr().out
    assert "fetched 2, skipped 0 (already there), unavailable 1, failed 0 of 3 clips" in out
    assert f"report: {root / 'fetch_report.json'}" in out

    # Nothing listens: every row fails with its reason, one error line, exit 1, no traceback.
    dead = server.url_template.replace(str(server.httpd.server_address[1]), "9")
    other = tmp_path / "other"
    code = cli_main(["data", "fetch", str(audiocaps), "--root", str(other), "--url-template", dead,
                     "--retries", "0", "--socket-timeout", "2"])
    err = capsys.readouterr().err  # the progress bar, then one error line
    assert code == 1 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("clapcap: error: 3 of 3 clips failed (first: aaaaaaaaaaa: ") and "refused" in err
    report = json.loads((other / "fetch_report.json").read_text())
    assert report["counts"] == {"ok": 0, "skipped": 0, "unavailable": 0, "failed": 3}
    assert not list((other / "audio").iterdir())


def test_segment_past_the_end_of_the_video_is_unavailable(tmp_path, media):
    server, _ = media
    (tmp_path / "late.csv").write_text("ytid,start_s,end_s\naaaaaaaaaaa,25,35\n")
    report = fetch_audio([tmp_path / "late.csv"], tmp_path / "audio",
                         options=FetchOptions(url_template=server.url_template))
    assert report.clips[0]["status"] == "unavailable"
    assert report.clips[0]["reason"] == "the segment starts at 25 s, the video is 20 s long"
    assert _temps(tmp_path / "audio") == []


@pytest.mark.parametrize("csv_text, match", [
    ("youtube_id,caption\nx,y\n", "neither an AudioCaps CSV"),
    ("audiocap_id,youtube_id,start_time,caption\n1,abc,soon,a dog\n", r"bad.csv: row 2: start_time must be"),
    ("ytid,start_s,end_s\n../etc,0,10\n", r"bad.csv: row 2: ytid must be a video id"),
    ("ytid,start_s,end_s\nabc,10,5\n", r"row 2 \(abc\): end_s 5 is not after start_s 10"),
    ("audiocap_id,youtube_id,start_time,caption\n1,abc,0,a\n2,abc,30,b\n",
     r"row 3 \(abc\): segment 30-40 s differs from 0-10 s on bad.csv: row 2"),
])
def test_malformed_csv_is_refused_before_any_download(tmp_path, csv_text, match):
    (tmp_path / "bad.csv").write_text(csv_text)
    with pytest.raises(ManifestError, match=match):
        fetch_audio([tmp_path / "bad.csv"], tmp_path / "audio",
                    options=FetchOptions(url_template="http://127.0.0.1:9/{id}"))
    assert not (tmp_path / "audio").exists()


def test_missing_yt_dlp_names_the_install_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yt_dlp", None)
    (tmp_path / "ok.csv").write_text("ytid,start_s,end_s\nabc,0,10\n")
    with pytest.raises(MissingDependencyError, match=r"needs yt-dlp: pip install .*\[fetch\]"):
        fetch_audio([tmp_path / "ok.csv"], tmp_path / "audio")


def test_importing_fetch_and_the_cli_loads_no_downloader():
    code = ("import sys, clapcap.cli, clapcap.data.fetch; "
            "sys.exit(sorted({'yt_dlp', 'imageio_ffmpeg'} & set(sys.modules)) or 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("kwargs", [{"url_template": "http://x/{ytid}"}, {"url_template": "http://x/"},
                                    {"jobs": 0}, {"audio_format": "aac"}])
def test_bad_options_are_refused(kwargs):
    with pytest.raises(ConfigError):
        FetchOptions(**kwargs)
