"""A published CLAP through the documented commands, offline (issue 39's end-to-end check).

Two hub ids of the published architecture (``laion/clap-htsat-fused`` and ``-unfused``: tiny
random weights in the real layout, in a Hugging Face cache in the hub's own layout) on an
AudioCaps-format and a Clotho-format set of real recordings (the ten CC0 animal recordings that
``make setup`` installs): ``data prepare``, ``retrieval embed`` per checkpoint and dataset (each
dump records the snapshot's commit), ``retrieval parity`` over the four dumps (the reference
report's four cells), and ``retrieval diagnose`` naming a planted mismatch.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from published_clap import build_published_clap, put_in_hub_cache  # tests/support

from clapcap.cli import main
from clapcap.data.dump import load_dump

ANIMALS = {"cat": "a cat meows", "cow": "a cow moos", "dog": "a dog barks", "duck": "a duck quacks",
           "frog": "a frog croaks", "horse": "a horse neighs", "owl": "an owl hoots", "pig": "a pig grunts",
           "rooster": "a rooster crows", "sheep": "a sheep bleats"}
COMMITS = {"laion/clap-htsat-fused": "f" * 40, "laion/clap-htsat-unfused": "8fa0f1c6d0433df6e97c127f64b2a1d6c0dcda8a"}


def _write_sets(root: Path) -> dict[str, Path]:
    """AudioCaps- and Clotho-format test sets of the real animal recordings; returns their params files."""
    import soundfile as sf

    from clapcap.data.audio import load_audio
    from clapcap.data.real import ovos_animals_root

    paths = sorted(ovos_animals_root().glob("*.mp3"))
    for name in ("audiocaps", "clotho"):
        (root / name / "audio").mkdir(parents=True)
    with open(root / "audiocaps" / "test.csv", "w", newline="") as fa, \
            open(root / "clotho" / "clotho_captions_evaluation.csv", "w", newline="") as fc:
        wa, wc = csv.writer(fa), csv.writer(fc)
        wa.writerow(["audiocap_id", "youtube_id", "start_time", "caption"])
        wc.writerow(["file_name", *(f"caption_{i}" for i in range(1, 6))])
        for i, path in enumerate(paths):
            wave, sr = load_audio(path)
            sf.write(root / "audiocaps" / "audio" / f"yt{path.stem}.wav", np.asarray(wave, np.float32), sr)
            sf.write(root / "clotho" / "audio" / f"{path.stem}.wav", np.asarray(wave, np.float32), sr)
            cap = ANIMALS[path.stem]
            wa.writerow([100 + i, f"yt{path.stem}", 0, cap.capitalize() + "."])
            wc.writerow([f"{path.stem}.wav", f"{cap.capitalize()}.", f"{cap.capitalize()} nearby.",
                         f"Someone hears {cap}.", f"{cap.capitalize()} twice.", f"{cap.capitalize()} outdoors."])
    params = {}
    for name, csv_name in (("audiocaps", "test.csv"), ("clotho", "clotho_captions_evaluation.csv")):
        params[name] = root / f"{name}.yaml"
        params[name].write_text(f"data: {{source: {name}, out_dir: {root / 'prepared' / name}, external: "
                                f"{{root: {root / name}, audio_dir: audio, csv: {{test: {csv_name}}}}}}}\n")
    return params


@pytest.fixture
def hub(tmp_path, monkeypatch) -> Path:
    import huggingface_hub.constants as constants

    cache = tmp_path / "hub"
    for i, (repo, commit) in enumerate(COMMITS.items()):
        put_in_hub_cache(build_published_clap(tmp_path / f"src{i}", fused=repo.endswith("-fused"), seed=i),
                         cache, repo, commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def test_published_checkpoints_on_audiocaps_and_clotho_through_the_commands(tmp_path, hub, capsys):
    params = _write_sets(tmp_path)
    dumps = []
    for name, path in params.items():
        assert main(["data", "prepare", "--params", str(path)]) == 0
        for repo in COMMITS:
            out = tmp_path / "dumps" / f"{repo.replace('/', '__')}__{name}__dump.npz"
            fused = ["--enable-fusion"] if repo.endswith("-fused") else []
            assert main(["retrieval", "embed", "--dataset", str(tmp_path / "prepared" / name), "--split", "test",
                         "--backend", "hf_clap", "--checkpoint", repo, "--out", str(out), *fused]) == 0
            meta = load_dump(out).meta
            assert meta["checkpoint"] == repo and meta["checkpoint_revision"] == COMMITS[repo]
            assert meta["preprocessing"]["truncation"] == ("fusion" if fused else "rand_trunc")
            dumps.append(out)
    capsys.readouterr()
    # The reference report's four cells: checkpoints x datasets, every metric within 1e-9.
    assert main(["retrieval", "parity", *map(str, dumps), "--out", str(tmp_path / "parity.json")]) == 0
    report = json.loads((tmp_path / "parity.json").read_text())
    cells = {c["source"]: c for c in report["cells"]}
    assert set(cells) == {p.name for p in dumps} and report["passed"] and report["worst_abs_delta"] <= 1e-9
    clotho = cells["laion__clap-htsat-unfused__clotho__dump.npz"]
    assert (clotho["n_clips"], clotho["n_captions"], clotho["multi_positive"]) == (10, 50, True)
    # A planted mismatch, named from the meta: the fused checkpoint embedded without fusion.
    planted = tmp_path / "dumps" / "planted.npz"
    assert main(["retrieval", "embed", "--dataset", str(tmp_path / "prepared" / "audiocaps"), "--split", "test",
                 "--checkpoint", "laion/clap-htsat-fused", "--out", str(planted)]) == 2
    assert "enable_fusion=False but the model config has enable_fusion=True" in capsys.readouterr().err
    assert main(["retrieval", "diagnose", str(dumps[0])]) == 0
    out = capsys.readouterr().out
    assert "beside: reference parity report: laion/clap-htsat-fused on audiocaps" in out
    assert "causes that differ: test_set_size" in out and "mine 10, known 957" in out
