"""Typed params: unknown keys, wrong types and missing keys are refused with the key path."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from clapcap.config import ConfigError, from_dict, load_section
from clapcap.data.config import DataParams

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


@dataclass
class Inner:
    lr: float
    layers: list[int] = field(default_factory=list)


@dataclass
class Outer:
    name: str
    inner: Inner
    mode: str = "a"


def test_nested_ok_and_int_to_float():
    cfg = from_dict(Outer, {"name": "x", "inner": {"lr": 1, "layers": [1, 2]}})
    assert cfg.inner.lr == 1.0 and isinstance(cfg.inner.lr, float)


@pytest.mark.parametrize("data,match", [
    ({"name": "x", "inner": {"lr": 1.0, "lr_typo": 2}}, r"unknown key\(s\) inner.lr_typo"),
    ({"name": "x", "inner": {"lr": "fast"}}, r"inner.lr: expected float, found str"),
    ({"name": "x", "inner": {"lr": 1.0, "layers": [1, "2"]}}, r"inner.layers\[1\]: expected int"),
    ({"name": "x"}, r"missing required key inner"),
    ({"name": 3, "inner": {"lr": 1.0}}, r"name: expected str"),
])
def test_bad_params_are_named(data, match):
    with pytest.raises(ConfigError, match=match):
        from_dict(Outer, data)


def test_repo_params_parse():
    params = load_section(DataParams, "data", REPO / "params.yaml")
    assert params.split_seed == 42 and params.source == "synthetic"


def test_literal_rejects_unknown_source():
    with pytest.raises(ConfigError, match="expected one of"):
        from_dict(DataParams, {"source": "youtube"})


@pytest.mark.parametrize("text,expected", [
    ("data:\n  out_dir: x\n  synthetic:\n    n_clips: many\n",
     "params.yaml:4: data.synthetic.n_clips: expected int, found str 'many'"),
    ("data:\n  out_dir: x\n\n  split_seed: 1\n  n_clip: 3\n", "params.yaml:5: unknown key(s) data.n_clip"),
    ("data:\n  split_fractions:\n    train: 0.8\n    val: lots\n",
     "params.yaml:4: data.split_fractions.val: expected float"),
    ("data:\n  synthetic:\n    n_clips: 0\n", "params.yaml:2: data.synthetic: n_clips must be >= 1"),
    ("data:\n  allowed_sample_rates: [16000, x]\n", "params.yaml:2: data.allowed_sample_rates[1]: expected int"),
    ("data:\n  out_dir: [x\n", "params.yaml:3: invalid YAML"),
])
def test_load_section_names_file_and_line(tmp_path, monkeypatch, text, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_section(DataParams, "data")
    assert str(info.value).startswith(expected)


def test_line_of_a_key_with_dots(tmp_path):
    """Mapping keys may hold dots (ablation names such as ``dropout0.3``)."""
    from clapcap.config import _key_line

    path = tmp_path / "p.yaml"
    path.write_text("a:\n  dropout0.3:\n    lr: 1\n    layers:\n      - 1\n      - 2\n")
    assert _key_line(path, "a.dropout0.3.lr") == 3
    assert _key_line(path, "a.dropout0.3.layers[1]") == 6
    assert _key_line(path, "a.missing") == 1
    assert _key_line(path, "b.x") is None


def test_exponent_floats_as_dvc_writes_them(tmp_path):
    """`dvc exp run -S x.lr=1e-7` writes `lr: 1e-07` (YAML 1.2 float; a string in PyYAML's YAML 1.1)."""
    from dataclasses import dataclass

    from clapcap.config import load_section

    @dataclass
    class Sec:
        lr: float = 0.1
        name: str = ""
        n: int = 0

    path = tmp_path / "params.yaml"
    path.write_text('sec:\n  lr: 1e-07\n  name: "1e-07"\n  n: 3\n')
    sec = load_section(Sec, "sec", path)
    assert sec.lr == 1e-7 and sec.name == "1e-07" and sec.n == 3
