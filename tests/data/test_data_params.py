"""The ``data`` section's split names: a typo is refused at load time, naming params.yaml and the line."""

from __future__ import annotations

import pytest

from clapcap.config import load_section
from clapcap.data.config import DataParams
from clapcap.errors import ConfigError

HEAD = "data:\n  source: clotho\n  out_dir: {out}\n  external:\n    root: {root}\n"


def _params_file(tmp_path, body: str):
    path = tmp_path / "params.yaml"
    path.write_text(HEAD.format(out=tmp_path / "corpus", root=tmp_path / "ds") + body)
    return path


@pytest.mark.parametrize("body, line, message", [
    ("    csv:\n      train: tr.csv\n      tset: te.csv\n", 8,
     "data.external.csv.tset: unknown split 'tset'; expected train, val, test or a single all"),
    ("    csv:\n      all: all.csv\n  split_fractions:\n    train: 0.8\n    vall: 0.2\n", 10,
     "data.split_fractions.vall: unknown split 'vall'; expected train, val, test"),
    # unused (per-split CSVs): old code accepted the typo without a word
    ("    csv:\n      train: tr.csv\n      test: te.csv\n  split_fractions:\n    train: 0.8\n    tst: 0.2\n", 11,
     "data.split_fractions.tst: unknown split 'tst'; expected train, val, test"),
    ("    csv:\n      all: all.csv\n      test: te.csv\n", 8,
     "data.external.csv.test: a single all entry (split by split_fractions) or per-split entries, not both"),
], ids=["csv", "fractions", "unused-fractions", "all-and-split"])
def test_unknown_split_name_is_refused_naming_file_and_line(tmp_path, body, line, message):
    """Old code: a csv typo failed later against the output manifest (leaving an empty out_dir),
    a fractions typo only when the fractions were used."""
    path = _params_file(tmp_path, body)
    with pytest.raises(ConfigError) as info:
        load_section(DataParams, "data", path)
    assert str(info.value) == f"{path}:{line}: {message}"
    assert not (tmp_path / "corpus").exists()


def test_known_split_names_load(tmp_path):
    path = _params_file(tmp_path, "    csv:\n      train: tr.csv\n      val: va.csv\n      test: te.csv\n")
    assert load_section(DataParams, "data", path).external.csv["val"] == "va.csv"
