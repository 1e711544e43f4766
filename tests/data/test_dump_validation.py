"""Embedding dumps: every array's dtype and shape is checked when a dump is read, with a
message naming the file, the array and what was expected (never a traceback, never a
silent conversion)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clapcap.data.dump import (
    DumpError,
    EmbeddingDump,
    load_dump,
    load_meta,
    save_dump,
    write_npz_deterministic,
)


def _arrays(**overrides) -> dict[str, np.ndarray]:
    """The arrays of a valid 3-clip, 3-caption dump, with ``overrides`` replacing some."""
    rng = np.random.default_rng(0)
    arrays = {
        "audio_embeds": rng.normal(size=(3, 4)).astype(np.float32),
        "text_embeds": rng.normal(size=(3, 4)).astype(np.float32),
        "caption_clip_index": np.arange(3, dtype=np.int64),
        "clip_ids": np.asarray(["a", "b", "c"]),
        "captions": np.asarray(["x", "y", "z"]),
        "meta": np.asarray(json.dumps({"split": "test"})),
    }
    return {**arrays, **overrides}


def _write(tmp_path, name: str = "d.npz", **overrides):
    path = tmp_path / name
    write_npz_deterministic(path, _arrays(**overrides))
    return path


@pytest.mark.parametrize("overrides,message", [
    ({"audio_embeds": np.full((3, 4), "hello")}, "audio_embeds: expected a floating-point array, found <U5"),
    ({"text_embeds": np.full((3, 4), "hi")}, "text_embeds: expected a floating-point array, found <U2"),
    ({"audio_embeds": np.ones((3, 4), dtype=np.int64)}, "audio_embeds: expected a floating-point array, found int64"),
    ({"text_embeds": np.ones((3, 4), dtype=bool)}, "text_embeds: expected a floating-point array, found bool"),
    ({"caption_clip_index": np.array([0, 1.5, 2])}, "caption_clip_index: expected an integer array, found float64"),
    # Integral floats are refused too: save_dump writes int64, so a float index is not ours.
    ({"caption_clip_index": np.array([0.0, 1.0, 2.0])}, "caption_clip_index: expected an integer array, found float64"),
    ({"caption_clip_index": np.array(["0", "1", "2"])}, "caption_clip_index: expected an integer array, found <U1"),
    ({"caption_clip_index": np.array([True, False, True])}, "caption_clip_index: expected an integer array, found bool"),
    ({"text_embeds": np.ones(3, dtype=np.float32)}, "text_embeds: expected a 2-D array (rows, dim), found shape (3,)"),
    ({"audio_embeds": np.ones((3, 4, 1), dtype=np.float32)}, "audio_embeds: expected a 2-D array (rows, dim), found shape (3, 4, 1)"),
    ({"audio_embeds": np.ones((3, 0), np.float32), "text_embeds": np.ones((3, 0), np.float32)},
     "audio_embeds and text_embeds have width 0, expected >= 1"),
    ({"text_embeds": np.array([[1, 2, 3, np.inf]] * 3, dtype=np.float32)}, "text_embeds row 0 has NaN or infinite values"),
    ({"clip_ids": np.asarray("abc")}, "clip_ids: expected a 1-D array of str, found <U3 of shape ()"),
    ({"clip_ids": np.asarray([["a", "b", "c"]])}, "clip_ids: expected a 1-D array of str, found <U1 of shape (1, 3)"),
    ({"clip_ids": np.arange(3)}, "clip_ids: expected a 1-D array of str, found int64 of shape (3,)"),
    ({"captions": np.asarray([b"x", b"y", b"z"])}, "captions: expected a 1-D array of str, found |S1 of shape (3,)"),
    ({"meta": np.asarray(3)}, "meta: expected a JSON string (0-d str array), found int64 of shape ()"),
    ({"meta": np.asarray("[1, 2]")}, "meta: expected a JSON object, found list"),
])
def test_a_malformed_array_is_named(tmp_path, overrides, message):
    path = _write(tmp_path, **overrides)
    with pytest.raises(DumpError) as info:
        load_dump(path)
    assert str(info.value).startswith(f"{path}: {message}")


def test_an_unsigned_index_is_read_as_int64(tmp_path):
    path = _write(tmp_path, caption_clip_index=np.array([2, 0, 1], dtype=np.uint16))
    dump = load_dump(path)
    assert dump.caption_clip_index.dtype == np.int64 and dump.caption_clip_index.tolist() == [2, 0, 1]


def test_a_float_index_is_refused_even_unvalidated_reads_keep_it(tmp_path):
    """``validate=False`` (used to read meta only) does not truncate a float index either."""
    path = _write(tmp_path, caption_clip_index=np.array([0, 1.5, 2]))
    dump = load_dump(path, validate=False)
    assert dump.caption_clip_index.dtype == np.float64
    with pytest.raises(DumpError, match="expected an integer array"):
        dump.validate(str(path))


def test_save_dump_refuses_a_float_index(tmp_path):
    arrays = _arrays()
    dump = EmbeddingDump(arrays["audio_embeds"], arrays["text_embeds"], np.array([0.0, 1.0, 2.0]),
                         ["a", "b", "c"], ["x", "y", "z"])
    with pytest.raises(DumpError, match=r"out.npz: caption_clip_index: expected an integer array, found float64"):
        save_dump(dump, tmp_path / "out.npz")
    assert not (tmp_path / "out.npz").exists()


def test_load_meta_reads_only_meta(tmp_path):
    path = _write(tmp_path, audio_embeds=np.full((3, 4), "not read"))
    assert load_meta(path) == {"split": "test"}
    with pytest.raises(FileNotFoundError):
        load_meta(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(DumpError, match="junk.npz: not a valid .npz embedding dump"):
        load_meta(tmp_path / "junk.npz")


def test_a_valid_dump_round_trips_byte_identically(tmp_path):
    """The checks change no valid dump: reading and saving again gives the same bytes."""
    first = _write(tmp_path, "first.npz")
    save_dump(load_dump(first), tmp_path / "second.npz")
    save_dump(load_dump(tmp_path / "second.npz"), tmp_path / "third.npz")
    assert (tmp_path / "second.npz").read_bytes() == (tmp_path / "third.npz").read_bytes()
