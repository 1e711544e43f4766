"""write_json writes strict JSON: NaN and Infinity are refused, naming the key path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from clapcap.utils.io import record_matches, write_json


def test_write_json_numpy_values_roundtrip(tmp_path):
    path = write_json(tmp_path / "ok.json", {"a": np.float32(0.5), "b": np.arange(3), "c": [1.5, None]})
    assert json.loads(path.read_text()) == {"a": 0.5, "b": [0, 1, 2], "c": [1.5, None]}


@pytest.mark.parametrize("data,where", [
    ({"similarity": {"pearson": float("nan")}}, r"\$\.similarity\.pearson is nan"),
    ({"history": [{"val_loss": 1.0}, {"val_loss": np.float32("inf")}]}, r"\$\.history\[1\]\.val_loss is inf"),
    ({"grid": np.array([[1.0, 2.0], [3.0, -np.inf]])}, r"\$\.grid\[1\]\[1\] is -inf"),
])
def test_write_json_refuses_non_finite(tmp_path, data, where):
    path = tmp_path / "r.json"
    with pytest.raises(ValueError, match=f"r.json: {where}, which JSON cannot hold"):
        write_json(path, data)
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_save_torch_bytes_depend_on_content_only(tmp_path):
    """Two atomic saves of the same tensors (random temporary names) give identical bytes."""
    import torch

    from clapcap.utils.torch_io import save_torch

    state = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.zeros(3)}
    a = save_torch(state, tmp_path / "a" / "weights.pt")
    b = save_torch(state, tmp_path / "b" / "other.pt")
    assert a.read_bytes() == b.read_bytes()
    assert torch.equal(torch.load(a)["w"], state["w"])


def test_atomic_dir_replaces_a_folder_only_on_success(tmp_path):
    import os

    from clapcap.utils.io import atomic_dir

    out = tmp_path / "model"
    with atomic_dir(out) as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "w.bin").write_bytes(b"1")
        assert not out.exists()
    umask = os.umask(0)
    os.umask(umask)
    assert (out / "sub" / "w.bin").read_bytes() == b"1"
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask
    assert (out / "sub" / "w.bin").stat().st_mode & 0o777 == 0o666 & ~umask
    with pytest.raises(RuntimeError, match="crash"), atomic_dir(out) as tmp:
        (tmp / "half").write_bytes(b"")
        raise RuntimeError("crash")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no temp folder left
    assert (out / "sub" / "w.bin").is_file() and not (out / "half").exists()  # the old one stays


def test_record_matches_only_the_same_record(tmp_path):
    record = {"sha256": "ab", "version": 1}
    assert not record_matches(tmp_path, record)  # nothing recorded yet
    write_json(tmp_path / "clapcap_source.json", record)
    assert record_matches(tmp_path, record)
    assert not record_matches(tmp_path, {**record, "sha256": "cd"})
    assert not record_matches(tmp_path, record, name="other.json")
