"""The CTranslate2 ``model.bin`` reader: the real Whisper tiny.en file, and hand-made files."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from clapcap.encoders.ct2 import Ct2FormatError, read_ct2_model


def _string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _variable(name: str, arr: np.ndarray, type_id: int, data: bytes | None = None) -> bytes:
    data = arr.tobytes() if data is None else data
    head = _string(name) + struct.pack("<B", arr.ndim) + b"".join(struct.pack("<I", d) for d in arr.shape)
    return head + struct.pack("<BI", type_id, len(data)) + data


def _model_bin(variables: list[bytes], aliases: list[tuple[str, str]], version: int = 6) -> bytes:
    out = struct.pack("<I", version) + _string("TestSpec") + struct.pack("<II", 2, len(variables))
    out += b"".join(variables) + struct.pack("<I", len(aliases))
    return out + b"".join(_string(a) + _string(t) for a, t in aliases)


def test_real_whisper_model_bin(ct2_dir):
    model = read_ct2_model(ct2_dir / "model.bin")
    assert (model.binary_version, model.spec, model.revision) == (6, "WhisperSpec", 3)
    assert len(model.variables) == 148
    assert model.get("encoder/conv1/weight").shape == (384, 80, 3)
    assert model.get("encoder/conv2/weight").shape == (384, 384, 3)
    assert model.get("encoder/position_encodings/encodings").shape == (1500, 384)
    assert model.get("encoder/layer_3/self_attention/linear_0/weight").shape == (1152, 384)
    assert model.get("decoder/layer_0/attention/linear_1/weight").shape == (768, 384)
    assert model.get("decoder/embeddings/weight").shape == (51864, 384)
    assert model.get("encoder/conv1/weight").dtype == np.float16
    assert model.scalar("encoder/num_heads") == 6 and model.scalar("decoder/num_heads") == 6
    assert model.aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    assert model.get("decoder/projection/weight") is model.get("decoder/embeddings/weight")
    assert not any(name.startswith("encoder/layer_4/") for name in model.variables)


def test_truncated_real_file_names_file_and_offset(ct2_dir, tmp_path):
    cut = tmp_path / "model.bin"
    cut.write_bytes((ct2_dir / "model.bin").read_bytes()[:5_000_000])
    with pytest.raises(Ct2FormatError, match=r"model\.bin: truncated at byte \d+ while reading the data of"):
        read_ct2_model(cut)


def test_roundtrip_dtypes_scalars_aliases(tmp_path):
    w = np.arange(6, dtype=np.float16).reshape(2, 3)
    i = np.array([1, -2, 3], dtype=np.int32)
    bf = np.array([1.5, -2.25], dtype=np.float32)
    bf_bytes = (bf.view(np.uint32) >> 16).astype("<u2").tobytes()  # exactly representable in bfloat16
    path = tmp_path / "model.bin"
    path.write_bytes(_model_bin([_variable("a/w", w, 4), _variable("a/heads", np.array(4, np.int16), 2),
                                 _variable("b/i", i, 3), _variable("c/bf", bf, 5, bf_bytes)], [("a/tied", "a/w")]))
    model = read_ct2_model(path)
    np.testing.assert_array_equal(model.get("a/w"), w)
    np.testing.assert_array_equal(model.get("b/i"), i)
    np.testing.assert_array_equal(model.get("c/bf"), bf)
    assert model.get("c/bf").dtype == np.float32
    assert model.scalar("a/heads") == 4
    np.testing.assert_array_equal(model.get("a/tied"), w)
    with pytest.raises(KeyError, match="TestSpec has no variable 'nope'"):
        model.get("nope")


@pytest.mark.parametrize("mutate, message", [
    (lambda b: struct.pack("<I", 99) + b[4:], "binary version 99"),
    (lambda b: b + b"\0\0", "2 unexpected bytes after the last alias"),
    (lambda b: b[:-3], "truncated at byte"),
])
def test_malformed_files(tmp_path, mutate, message):
    good = _model_bin([_variable("x", np.zeros(3, np.float32), 0)], [("y", "x")])
    path = tmp_path / "model.bin"
    path.write_bytes(mutate(good))
    with pytest.raises(Ct2FormatError, match=message):
        read_ct2_model(path)


def test_size_mismatch_and_unknown_dtype(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(_model_bin([_variable("x", np.zeros(3, np.float32), 0, b"\0" * 8)], []))
    with pytest.raises(Ct2FormatError, match=r"'x' of shape \(3,\) and dtype float32 should hold 12 bytes, the file says 8"):
        read_ct2_model(path)
    path.write_bytes(_model_bin([_variable("x", np.zeros(3, np.float32), 9)], []))
    with pytest.raises(Ct2FormatError, match="unknown dtype id 9"):
        read_ct2_model(path)
    path.write_bytes(_model_bin([_variable("x", np.zeros(3, np.float32), 0)], [("y", "missing")]))
    with pytest.raises(Ct2FormatError, match=r"alias\(es\) \['y'\] point to no variable"):
        read_ct2_model(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="model.bin not found"):
        read_ct2_model(tmp_path / "model.bin")
