"""Fetching the real corpus's pinned packages (clapcap.data.corpus.packages): a real ``.deb``
built with ``dpkg-deb -b`` stands in for the apt download."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from clapcap.data.corpus.packages import PINS, RECORD, PackagePin, fetch_packages
from clapcap.errors import ClapcapError, InputError

FILES = {
    "usr/share/games/hedgewars/Data/Sounds/sheep.ogg": b"OggS sheep",
    "usr/share/games/hedgewars/Data/Sounds/readme.txt": b"not audio",
    "usr/share/games/hedgewars/Data/Maps/map.png": b"png",
    "usr/bin/hedgewars": b"#!/bin/sh\n",
    "usr/share/doc/hedgewars-data/copyright": b"Format: dep5\n",
}


@pytest.fixture(scope="module")
def deb(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pkg") / "root"
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text("Package: hedgewars-data\nVersion: 1.0.2-6\nArchitecture: all\n"
                                             "Maintainer: t <t@example.org>\nDescription: test\n")
    out = root.parent / "hedgewars-data_1.0.2-6_all.deb"
    subprocess.run(["dpkg-deb", "-b", "-Zgzip", str(root), str(out)], check=True, capture_output=True)
    return out


def _pin(deb: Path) -> PackagePin:
    real = next(p for p in PINS if p.name == "hedgewars-data")
    return replace(real, sha256=hashlib.sha256(deb.read_bytes()).hexdigest(), size=deb.stat().st_size)


def _downloader(deb: Path, calls: list[str]):
    def download(pin, folder):
        calls.append(pin.name)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / deb.name
        target.write_bytes(deb.read_bytes())
        return target
    return download


def test_only_the_audio_and_the_doc_are_unpacked_and_a_rerun_skips(deb, tmp_path):
    calls: list[str] = []
    pin = _pin(deb)
    records = fetch_packages(tmp_path, download=_downloader(deb, calls), pins=[pin])
    folder = tmp_path / "hedgewars-data"
    kept = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != RECORD)
    assert kept == ["usr/share/doc/hedgewars-data/copyright", "usr/share/games/hedgewars/Data/Sounds/sheep.ogg"]
    assert records["hedgewars-data"]["files"] == 2 and records["hedgewars-data"]["version"] == "1.0.2-6"
    assert not list((tmp_path / "debs").glob("*.deb")) and not (tmp_path / "hedgewars-data.tmp").exists()
    fetch_packages(tmp_path, download=_downloader(deb, calls), pins=[pin])
    assert calls == ["hedgewars-data"]  # the second run found it unpacked
    index = json.loads((tmp_path / "packages.json").read_text())  # the stage's one dependency file
    assert index == {"packages": {"hedgewars-data": records["hedgewars-data"]}}


def test_a_hash_mismatch_is_refused_and_nothing_is_unpacked(deb, tmp_path):
    pin = replace(_pin(deb), sha256="0" * 64)
    with pytest.raises(ClapcapError, match="SHA-256 .* the pin says 0{64}.*deleted, nothing unpacked"):
        fetch_packages(tmp_path, download=_downloader(deb, []), pins=[pin])
    assert not (tmp_path / "hedgewars-data").exists() and not list(tmp_path.rglob("*.deb"))


def test_a_half_unpacked_package_is_redone(deb, tmp_path):
    """An interrupted run leaves <name>.tmp, or a folder without its record: both are redone."""
    (tmp_path / "hedgewars-data.tmp" / "junk").mkdir(parents=True)
    (tmp_path / "hedgewars-data").mkdir()
    (tmp_path / "hedgewars-data" / "partial.ogg").write_bytes(b"x")
    fetch_packages(tmp_path, download=_downloader(deb, []), pins=[_pin(deb)])
    assert not (tmp_path / "hedgewars-data" / "partial.ogg").exists()
    assert json.loads((tmp_path / "hedgewars-data" / RECORD).read_text())["files"] == 2
    assert not (tmp_path / "hedgewars-data.tmp").exists()


def test_unknown_names_are_refused_before_anything(tmp_path):
    with pytest.raises(InputError, match="not a pinned corpus package: hedgewars"):
        fetch_packages(tmp_path, ["hedgewars"], download=lambda *_: pytest.fail("downloaded"))


def test_pins_are_well_formed():
    """Every pin names a 64-hex SHA-256 and a size, once; the readers' packages are all pinned."""
    assert len({p.name for p in PINS}) == len(PINS) >= 10
    for pin in PINS:
        assert len(pin.sha256) == 64 and int(pin.sha256, 16) >= 0 and pin.size > 0


def test_cli_refuses_an_unpinned_package_in_one_line(tmp_path, capsys):
    from clapcap.cli import main

    assert main(["assets", "corpus-packages", "--dest", str(tmp_path), "--only", "0ad"]) == 2
    err = capsys.readouterr().err
    assert "clapcap: error: not a pinned corpus package: 0ad" in err and "Traceback" not in err
