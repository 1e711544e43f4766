"""Assembling the real corpus (clapcap.data.corpus.assemble) from tiny unpacked packages: the
speech cap, the render fill from a tiny sf2, the cross-source test set, no source or audio in
two splits, and a folder dataset that the project's own folder reader loads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from tests.support.tiny_sf2 import tiny_sf2

from clapcap.data.corpus import assemble
from clapcap.data.corpus.records import ClipRecord
from clapcap.data.prepare import load_dataset
from clapcap.data.readers import read_folder
from clapcap.errors import ClapcapError, InputError


def _wav(path: Path, seed: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, 0.1 * np.random.default_rng(seed).standard_normal(1600).astype(np.float32), 8000)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _package(root: Path, package: str, groups: dict[str, int], family: str, seed: int, shared: str = ""):
    """A fake unpacked package with ``n`` clips per group; its reader returns their records."""
    records = []
    for g, (group, n) in enumerate(groups.items()):
        for i in range(n):
            rel = f"usr/share/{package}/{group}/{i}.wav"
            digest = _wav(root / package / rel, seed * 1000 + g * 100 + i)
            if shared and i == 0:  # the same recording shipped twice
                (root / package / rel).write_bytes((root / shared).read_bytes())
                digest = hashlib.sha256((root / shared).read_bytes()).hexdigest()
            caps = (f"a {group} sound number {i}",) if family != "speech" else (f'someone saying "{i}"', f"{i}")
            records.append(ClipRecord(package=package, version="1-1", path=rel, member=None, captions=caps,
                                      labels=(group,), family=family, group=f"{package}/{group}", licence="CC0",
                                      copyright="x", sha256=digest, language="en" if family == "speech" else None))
    return lambda _d: records


@pytest.fixture
def packages(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "pk"
    readers = {
        "fx": _package(root, "fx", {"dogs": 6, "doors": 6, "rain": 6, "bells": 6}, "effects", 1),
        "kit": _package(root, "kit", {"kit1": 5, "kit2": 5}, "drums", 2),
        "animals": _package(root, "animals", {"cc0": 5}, "effects", 3),
        "voices": _package(root, "voices", {"fr": 30, "de": 30}, "speech", 4),
    }
    monkeypatch.setattr(assemble, "READERS", readers)
    monkeypatch.setattr(assemble, "GM_INSTRUMENTS", {73: "flute"})  # the tiny sf2's one preset
    sf2 = root / assemble.TIMGM[0] / assemble.TIMGM[1]
    sf2.parent.mkdir(parents=True)
    sf2.write_bytes(tiny_sf2(program=73))
    (root / assemble.TIMGM[0] / "usr/share/doc" / assemble.TIMGM[0]).mkdir(parents=True)
    (root / assemble.TIMGM[0] / "usr/share/doc" / assemble.TIMGM[0] / "copyright").write_text(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
        "Files: *\nCopyright: 2024 Sample Maker\nLicense: MIT\n")
    return root


def _params(packages: Path, tmp_path: Path, **kw) -> assemble.CorpusParams:
    base = dict(packages_dir=str(packages), out_dir=str(tmp_path / "corpus"), target_clips=60,
                packages=["fx", "kit", "animals", "voices", assemble.TIMGM[0]], test_groups=["animals", "fx/bells"],
                render_notes=[48, 60, 72], render_velocities=[40, 110], val_fraction=0.3)
    return assemble.CorpusParams(**{**base, **kw})


def test_speech_is_capped_renders_fill_and_test_is_cross_source(packages, tmp_path):
    report = assemble.build_corpus(_params(packages, tmp_path))
    out = tmp_path / "corpus"
    rows, _ = read_folder(out, out / "metadata.csv")
    sources = {r["file_name"]: r for r in __import__("csv").DictReader(open(out / "sources.csv"))}
    # 39 packaged non-speech clips + 3 flute renders (of the program's 3 notes x 2 velocities: the
    # target needs round(60 * 0.7) - 39 = 3) = 42; speech at most 30 %: int(42 * 0.3 / 0.7) = 18
    # clips, round-robin over fr and de: 60 clips, the target.
    assert report["renders"] == 3 and report["clips"] == 42 + 18 == 60 == len(rows)
    assert report["speech_fraction"] <= 0.30
    speech = [s for s in sources.values() if s["family"] == "speech"]
    assert {s["group"] for s in speech} == {"voices/fr", "voices/de"} and len(speech) == 18
    by_split = {r["audio_path"]: r["split"] for _, r in rows.iterrows()}
    for name, split in by_split.items():
        if sources[name]["package"] == "animals" or sources[name]["group"] == "fx/bells":
            assert split == "test", name
        else:
            assert split in ("train", "val"), name
    for key in ("group", "sha256"):
        owners: dict[str, set] = {}
        for name, s in sources.items():
            owners.setdefault(s[key], set()).add(by_split[name])
        assert all(len(v) == 1 for v in owners.values()), key
    flute = [r for _, r in rows.iterrows() if sources[r["audio_path"]]["is_render"] == "True"]
    assert len(flute) == 3 and all("flute" in r["captions"][0] for r in flute)
    assert not (tmp_path / "corpus.tmp").exists() and json.loads((out / "report.json").read_text()) == report
    ds = load_dataset(out)  # the prepared format: the same clips, splits and captions
    manifest = ds.manifest.set_index("audio_path")
    assert len(manifest) == 60 and ds.root == out.resolve()
    for name, row in rows.set_index("audio_path").iterrows():
        assert manifest.loc[name, "split"] == row["split"] and manifest.loc[name, "captions"] == row["captions"]
        assert manifest.loc[name, "meta"]["sha256"] == sources[name]["sha256"]
        info = sf.info(out / name)
        assert manifest.loc[name, "duration_s"] == round(info.duration, 4)
        assert manifest.loc[name, "sample_rate"] == info.samplerate


def test_a_test_source_that_shares_audio_with_training_is_refused(packages, tmp_path, monkeypatch):
    shared = "fx/usr/share/fx/dogs/1.wav"
    assemble.READERS["animals"] = _package(packages, "animals", {"cc0": 3}, "effects", 3, shared=shared)
    with pytest.raises(ClapcapError, match="audio in two splits|source.* in two splits"):
        assemble.build_corpus(_params(packages, tmp_path))
    assert not (tmp_path / "corpus").exists()


def test_a_missing_package_names_the_make_target(packages, tmp_path):
    with pytest.raises(InputError, match=r"nothing/fx: package fx is not unpacked; run `make corpus-assets`"):
        assemble.build_corpus(_params(packages, tmp_path, packages_dir=str(tmp_path / "nothing")))


def test_params_are_checked():
    with pytest.raises(ValueError, match="no reader for"):
        assemble.CorpusParams(packages=["not-a-package"])
    with pytest.raises(ValueError, match="max_speech_fraction"):
        assemble.CorpusParams(max_speech_fraction=1.0)


def test_a_file_that_does_not_decode_is_left_out_and_listed(packages, tmp_path):
    """lmms-common ships kick04.ogg with a malformed WAV 'fmt ' chunk: it was copied into the
    corpus, and every reader of the corpus failed on it."""
    broken = packages / "kit/usr/share/kit/kit1/2.wav"
    broken.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt \x02\x00\x00\x00\x01\x00" + b"\x00" * 24)
    report = assemble.build_corpus(_params(packages, tmp_path))
    assert report["undecodable"].keys() == {"kit:usr/share/kit/kit1/2.wav"}
    assert "0x" not in report["undecodable"]["kit:usr/share/kit/kit1/2.wav"]  # no memory address: same bytes each run
    rows, _ = read_folder(tmp_path / "corpus", tmp_path / "corpus" / "metadata.csv")
    # Left out before the fill is counted: one more render takes its place, so the target (60)
    # and the speech cap (18 of 60) hold on what is written.
    assert len(rows) == report["clips"] == 60 and "audio/kit/usr/share/kit/kit1/2.wav" not in set(rows["audio_path"])
    assert report["renders"] == 4 and report["speech_fraction"] <= 0.30
    assert len(list((tmp_path / "corpus/audio").rglob("*.wav"))) == 60


def _record(group: str, family: str, i: int) -> ClipRecord:
    return ClipRecord(package=group.split("/")[0], version="1", path=f"{group}/{i}.wav", member=None,
                      captions=("a sound",), labels=("sound",), family=family, group=group, licence="MIT",
                      copyright="x", sha256=f"{group}-{i}")


def test_val_gets_groups_of_every_family_that_has_several():
    # One big speech family of many small groups, and effects in four groups: over all groups at
    # once the small speech groups alone fill val's 10 %; split per family, val also holds effects.
    records = [_record(f"voice/{v}", "speech", i) for v in range(40) for i in range(20)]
    records += [_record(f"fx{g}", "effects", i) for g in range(4) for i in range(25)]
    splits = assemble._assign_splits(records, assemble.CorpusParams(test_groups=[], val_fraction=0.1))
    val_families = {r.family for r, s in zip(records, splits, strict=True) if s == "val"}
    assert val_families == {"speech", "effects"}
    fx_val = sum(s == "val" for r, s in zip(records, splits, strict=True) if r.family == "effects")
    assert fx_val == 25  # one whole effects group


def test_a_family_of_one_or_two_groups_keeps_them_all_in_train():
    from clapcap.data.corpus.records import holdout_groups

    records = [_record(f"kit{g}", "drums", i) for g in range(2) for i in range(30)]
    assert holdout_groups(records, 0.1, seed=0) == set()
    records += [_record("kit2", "drums", i) for i in range(40)]
    assert holdout_groups(records, 0.1, seed=0) == {"kit0"}  # none fits twice 10: the smallest, by name
    with pytest.raises(ValueError, match="fraction must be in"):
        holdout_groups(records, 1.0, seed=0)
