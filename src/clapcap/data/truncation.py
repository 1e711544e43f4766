"""Is an audio file cut short? What its header promises against what decodes.

An interrupted download or copy leaves a file whose header states the whole length while its
data stops early. libsndfile reads a cut WAV or AIFF as a shorter clip (it clamps the length to
the bytes present), and reports a cut FLAC or MP3 at its full length although its end never
decodes. :func:`cut_short` tells, per container:

- **WAV** (RIFF/RIFX) and **AIFF** (FORM): the chunks are walked; a chunk, or the RIFF/FORM
  itself, that claims more bytes than the file holds is a cut. The promise in seconds is the
  ``data`` chunk's size over the byte rate (WAV) or the ``COMM`` frame count (AIFF). Sizes left
  unknown by a writer that streamed (0 or 0xFFFFFFFF) are not a cut; RF64 is not checked.
- **FLAC** (STREAMINFO's sample count) and **MP3** with a Xing/Info/VBRI header (its frame
  count): the last frames must decode (an MP3 may fall two MPEG frames short, as libmpg123
  counts encoder padding differently). Without such a header libmpg123 estimates an MP3's
  length from the file size, so a cut cannot be told and is not checked.
- **Ogg** (Vorbis, Opus): no length is stated; the last page must be whole and carry the
  end-of-stream flag (RFC 3533).

Only headers and the last few thousand frames are read; a cut file is decoded whole once, to
say how much of it decodes.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

_TAIL = 8192  # frames read at the end of a FLAC or MP3
_MP3_SLACK = 2 * 1152  # two MPEG-1 layer III frames
_UNKNOWN = (0, 0xFFFFFFFF)  # sizes a streaming writer leaves


def cut_short(path: Path, info: Any) -> str | None:
    """The reason ``path`` is cut short, or None when it is whole or its container states no length.

    ``info`` is the file's ``soundfile.info`` (``format``, ``frames``, ``samplerate``).
    """
    fmt = info.format
    if fmt in ("WAV", "WAVEX", "AIFF"):
        return _iff_cut(path, info)
    if fmt == "FLAC" or (fmt in ("MP3", "MPEG") and _mp3_states_length(path)):
        return _tail_cut(path, info, slack=0 if fmt == "FLAC" else _MP3_SLACK)
    if fmt == "OGG":
        return _ogg_cut(path, info)
    return None


def _message(promised_s: float, decoded_s: float) -> str:
    return (f"cut short: its header promises {promised_s:.3f} s but only {decoded_s:.3f} s decode "
            f"(an interrupted download or copy?)")


def _iff_cut(path: Path, info: Any) -> str | None:
    """A WAV or AIFF whose RIFF/FORM or one of its chunks runs past the end of the file."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(12)
        if len(head) < 12 or head[:4] not in (b"RIFF", b"RIFX", b"FORM"):
            return None  # RF64/BW64 and others: sizes live elsewhere
        order = "<" if head[:4] == b"RIFF" else ">"
        declared = struct.unpack(order + "I", head[4:8])[0]
        chunks = _chunks(fh, order, min(size, declared + 8) if declared not in _UNKNOWN else size)
    frames, sr = info.frames, info.samplerate
    for cid, start, length, _body in chunks:
        if length in _UNKNOWN and cid == b"data":
            continue
        if start + length > size:
            if cid in (b"data", b"SSND"):
                promised = _promised_s(chunks, length, sr)
                return _message(promised, frames / sr) if promised is not None else \
                    f"cut short: its {cid.decode()} chunk promises {length} bytes, the file holds {size - start}"
            return (f"cut short: its {head[:4].decode()} header promises {declared + 8} bytes, the file holds "
                    f"{size} (chunk {cid.decode()!r} ends past the end)")
    # Some writers count the 8-byte RIFF header in its size: up to 8 bytes more are not a cut.
    if declared not in _UNKNOWN and declared + 8 > size + 8 + (declared & 1):
        return f"cut short: its {head[:4].decode()} header promises {declared + 8} bytes, the file holds {size}"
    return None


def _chunks(fh: Any, order: str, end: int) -> list[tuple[bytes, int, int, bytes]]:
    """``(id, data offset, declared length, first bytes of fmt/COMM)`` of each chunk header before ``end``."""
    out, pos = [], 12
    while pos + 8 <= end:
        fh.seek(pos)
        cid, length = struct.unpack(order + "4sI", fh.read(8))
        body = fh.read(18) if cid in (b"fmt ", b"COMM") else b""
        out.append((cid, pos + 8, length, body))
        if length in _UNKNOWN and cid == b"data":
            break
        pos += 8 + length + (length & 1)  # chunks are padded to an even size
    return out


def _promised_s(chunks: list[tuple[bytes, int, int, bytes]], data_len: int, sr: int) -> float | None:
    """Seconds the header states: WAV data bytes over the ``fmt`` byte rate, AIFF ``COMM`` frames."""
    for cid, _, _, body in chunks:
        if cid == b"fmt " and len(body) >= 12:
            byte_rate = struct.unpack("<I", body[8:12])[0]
            return data_len / byte_rate if byte_rate else None
        if cid == b"COMM" and len(body) >= 6:
            return struct.unpack(">I", body[2:6])[0] / sr
    return None


def _mp3_states_length(path: Path) -> bool:
    """True when the first MPEG frame (after an ID3v2 tag) is a Xing, Info or VBRI header."""
    with path.open("rb") as fh:
        head = fh.read(10)
        start = 0
        if head[:3] == b"ID3" and len(head) == 10:
            start = 10 + sum((b & 0x7F) << (7 * (3 - i)) for i, b in enumerate(head[6:10]))
            start += 10 if head[5] & 0x10 else 0  # footer
        fh.seek(start)
        data = fh.read(4096)
    sync = next((i for i in range(len(data) - 1) if data[i] == 0xFF and data[i + 1] & 0xE0 == 0xE0), None)
    if sync is None:
        return False
    frame = data[sync:sync + 200]
    return any(tag in frame for tag in (b"Xing", b"Info", b"VBRI"))


def _decodable_frames(path: Path) -> int:
    """Frames that decode from the start, block by block, up to the first decoder error."""
    import soundfile as sf

    n = 0
    with sf.SoundFile(str(path)) as f:
        while True:
            try:
                block = f.read(4096, dtype="float32")
            except (sf.LibsndfileError, RuntimeError):
                return n
            if len(block) == 0:
                return n
            n += len(block)


def _tail_cut(path: Path, info: Any, slack: int) -> str | None:
    """A FLAC or MP3 whose last stated frames do not decode (read: the last ``_TAIL`` frames)."""
    import soundfile as sf

    frames, sr = info.frames, info.samplerate
    try:
        with sf.SoundFile(str(path)) as f:
            start = max(0, frames - _TAIL)
            f.seek(start)
            end = start + len(f.read(_TAIL, dtype="float32"))
    except (sf.LibsndfileError, RuntimeError):
        end = None
    if end is not None and end >= frames - slack:
        return None
    return _message(frames / sr, _decodable_frames(path) / sr)


def _ogg_cut(path: Path, info: Any) -> str | None:
    """An Ogg file whose last page is cut or lacks the end-of-stream flag."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        fh.seek(max(0, size - 65536 - 282))  # a page holds at most 27 + 255 + 255 * 255 bytes
        tail = fh.read()
    at = tail.rfind(b"OggS")
    while at >= 0 and (len(tail) < at + 27 or tail[at + 4] != 0):  # a capture pattern inside a packet
        at = tail.rfind(b"OggS", 0, at)
    if at < 0:
        return None
    nseg = tail[at + 26]
    length = 27 + nseg + sum(tail[at + 27:at + 27 + nseg])
    whole = len(tail) >= at + 27 + nseg and at + length <= len(tail)
    if whole and tail[at + 5] & 0x04:
        return None
    return (f"cut short: its Ogg stream ends without its last page (no end-of-stream page); only "
            f"{_decodable_frames(path) / info.samplerate:.3f} s decode (an interrupted download or copy?)")
