"""Typed params: unknown keys, wrong types and missing keys are refused with the key path."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from clapcap.config import ConfigError, from_dict, load_section
from clapcap.data.prepare import DataParams

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
