"""A minimal SoundFont 2 file written byte by byte: one sampled sine (a real sf2 sample) and
one preset, enough for tinysoundfont to render notes in a test."""

from __future__ import annotations

import struct

import numpy as np


def _chunk(tag: bytes, data: bytes) -> bytes:
    pad = b"\0" if len(data) % 2 else b""
    return tag + struct.pack("<I", len(data)) + data + pad


def _list(kind: bytes, *chunks: bytes) -> bytes:
    return _chunk(b"LIST", kind + b"".join(chunks))


def _name(text: str) -> bytes:
    return text.encode()[:19].ljust(20, b"\0")


def tiny_sf2(*, program: int = 73, bank: int = 0, rate: int = 22050, pitch: int = 69, sample: str = "sine") -> bytes:
    """An sf2 with preset ``bank:program`` playing a looped sine recorded at MIDI ``pitch``, its
    sample named ``sample``."""
    period = rate / 440.0 * 2 ** ((pitch - 69) / 12)
    n = int(round(period * 50))
    wave = (0.5 * 32767 * np.sin(2 * np.pi * np.arange(n) / period)).astype("<i2")
    smpl = wave.tobytes() + b"\0" * 92  # 46 zero samples after each sample
    info = _list(b"INFO", _chunk(b"ifil", struct.pack("<HH", 2, 1)), _chunk(b"isng", b"EMU8000\0"),
                 _chunk(b"INAM", b"Tiny\0\0"))
    sdta = _list(b"sdta", _chunk(b"smpl", smpl))
    phdr = (_name("Tiny Flute") + struct.pack("<HHHIII", program, bank, 0, 0, 0, 0)
            + _name("EOP") + struct.pack("<HHHIII", 0, 0, 1, 0, 0, 0))
    pbag = struct.pack("<HH", 0, 0) + struct.pack("<HH", 1, 0)
    pgen = struct.pack("<HH", 41, 0) + struct.pack("<HH", 0, 0)  # instrument 0
    inst = _name("Tiny Sine") + struct.pack("<H", 0) + _name("EOI") + struct.pack("<H", 1)
    ibag = struct.pack("<HH", 0, 0) + struct.pack("<HH", 2, 0)
    igen = (struct.pack("<Hh", 54, 1)  # sampleModes: loop
            + struct.pack("<HH", 53, 0)  # sampleID 0
            + struct.pack("<HH", 0, 0))
    shdr = (_name(sample) + struct.pack("<IIIIIBbHH", 0, n, 0, n, rate, pitch, 0, 0, 1)
            + _name("EOS") + struct.pack("<IIIIIBbHH", 0, 0, 0, 0, 0, 0, 0, 0, 0))
    pdta = _list(b"pdta", _chunk(b"phdr", phdr), _chunk(b"pbag", pbag), _chunk(b"pmod", b"\0" * 10),
                 _chunk(b"pgen", pgen), _chunk(b"inst", inst), _chunk(b"ibag", ibag),
                 _chunk(b"imod", b"\0" * 10), _chunk(b"igen", igen), _chunk(b"shdr", shdr))
    body = b"sfbk" + info + sdta + pdta
    return b"RIFF" + struct.pack("<I", len(body)) + body
