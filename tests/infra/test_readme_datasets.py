"""The README's dataset examples run as pasted: each loads as params, has a train split and
writes where the DVC stages read (issue 39: they listed a test CSV only, into data/clotho)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from clapcap.config import load_section
from clapcap.data.config import DataParams

ROOT = Path(__file__).resolve().parents[2]


def _examples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    block = text[text.index("### Using a real dataset"):text.index("### Retrieval with your CLAP checkpoint")]
    return re.findall(r"^# (\w+)\.yaml: .*\n(data: .*)$", block, flags=re.M)


def test_the_readme_has_an_example_per_format():
    assert [name for name, _ in _examples()] == ["clotho", "audiocaps", "musiccaps", "folder"]


@pytest.mark.parametrize("name,line", _examples(), ids=lambda v: v if isinstance(v, str) and "data:" not in v else "")
def test_each_example_loads_with_a_train_split_into_the_stages_folder(name, line, tmp_path):
    path = tmp_path / f"{name}.yaml"
    path.write_text(line + "\n")
    params = load_section(DataParams, "data", path)
    stages_dir = yaml.safe_load((ROOT / "params.yaml").read_text())["data"]["out_dir"]
    assert params.out_dir == stages_dir
    csv = params.external.csv
    has_train = "train" in csv or ("all" in csv and params.split_fractions.get("train", 0) > 0)
    has_test = "test" in csv or params.split_fractions.get("test", 0) > 0 or params.split_by == "is_audioset_eval"
    assert has_train and has_test
