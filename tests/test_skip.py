"""Stages that do not apply to a real dataset skip with a reason instead of failing
(clapcap.utils.skip; issue 28 item 15)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from clapcap.utils.skip import MARKER, mark_skipped, skip_if_inputs_skipped, skip_reason


@pytest.fixture
def real_like(tiny_corpus, tmp_path) -> Path:
    """The tiny corpus relabelled as a Clotho dataset: no view columns, source clotho."""
    from clapcap.data.manifest import write_manifest
    from clapcap.data.prepare import load_dataset

    out = tmp_path / "clotho"
    out.mkdir()
    ds = load_dataset(tiny_corpus)
    df = ds.manifest.drop(columns=[c for c in ds.manifest.columns if c.startswith("paraphrases_")])
    df["source"] = "clotho"
    write_manifest(df, out / "manifest.csv")
    info = json.loads((tiny_corpus / "dataset.json").read_text())
    info.update(root=str(ds.root), source="clotho")
    info.pop("build", None)  # not built by prepare from input files (embed checks those of a real build)
    (out / "dataset.json").write_text(json.dumps(info))
    return out


def test_marker_round_trip_for_folders_and_files(tmp_path):
    folder, result, table = tmp_path / "models/x", tmp_path / "results/x.json", tmp_path / "results/x.md"
    folder.mkdir(parents=True)
    (folder / "old.bin").write_text("stale")
    mark_skipped([folder, result, table], stage="s", reason="not for this dataset")
    assert sorted(p.name for p in folder.iterdir()) == [MARKER]  # the old output is gone
    for path in (folder, folder / "anything.npz", result):
        assert skip_reason(path) == "s: not for this dataset"
    assert "not for this dataset" in table.read_text()
    real = tmp_path / "real.json"
    real.write_text(json.dumps({"skipped": False, "r@10": 0.5}))
    assert skip_reason(real) is None and skip_reason(tmp_path / "missing") is None


def test_skip_propagates_to_the_outputs(tmp_path):
    upstream, downstream = tmp_path / "up", tmp_path / "down"
    mark_skipped([upstream], stage="robust_paraphrase", reason="no views")
    assert skip_if_inputs_skipped([upstream], [downstream], stage="robust_text_store")
    assert "robust_paraphrase: no views" in skip_reason(downstream)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert not skip_if_inputs_skipped([fresh], [tmp_path / "other"], stage="x")
    assert not (tmp_path / "other").exists()


def test_corpus_views_on_a_real_dataset_skip_robustclap(real_like, tmp_path):
    from clapcap.paraphrase.dataset import ParaphraseParams
    from clapcap.robust.config import RobustTextStoreParams
    from clapcap.robust.text_store import build_text_store
    from clapcap.tracked.paraphrase import run_paraphrase

    out = tmp_path / "paraphrased"
    report = run_paraphrase(ParaphraseParams(dataset_dir=str(real_like), out_dir=str(out), heldout_splits=[],
                                             track=False), progress=False)
    assert "'clotho' dataset without paraphrase views" in report["skipped"]
    assert "backend: llm" in skip_reason(out)
    store = tmp_path / "store"
    build_text_store(RobustTextStoreParams(paraphrase_dir=str(out), out_dir=str(store)))
    assert "robust_paraphrase" in skip_reason(store)


def test_corpus_without_views_is_still_an_error(tiny_corpus, tmp_path):
    """Only a real dataset skips: a synthetic corpus that lost its views is a bug to report."""
    from clapcap.data.manifest import ManifestError, write_manifest
    from clapcap.data.prepare import load_dataset
    from clapcap.paraphrase.dataset import ParaphraseParams
    from clapcap.tracked.paraphrase import run_paraphrase

    broken = tmp_path / "corpus"
    broken.mkdir()
    ds = load_dataset(tiny_corpus)
    write_manifest(ds.manifest.drop(columns=["paraphrases_v1"]), broken / "manifest.csv")
    info = json.loads((tiny_corpus / "dataset.json").read_text())
    (broken / "dataset.json").write_text(json.dumps({**info, "root": str(ds.root)}))
    with pytest.raises(ManifestError, match="no paraphrases_v1 column"):
        run_paraphrase(ParaphraseParams(dataset_dir=str(broken), out_dir=str(tmp_path / "p"), heldout_splits=[],
                                        track=False), progress=False)


def test_music_subset_of_a_real_dataset_skips(real_like, tiny_corpus, tmp_path):
    from clapcap.data.subset import subset_dataset
    from clapcap.errors import InputError

    out = subset_dataset(real_like, tmp_path / "music", source="synthetic_music")
    assert "'clotho' dataset with no 'synthetic_music' clips" in skip_reason(out)
    with pytest.raises(InputError, match="no clip has source 'no_such_source'"):
        subset_dataset(tiny_corpus, tmp_path / "music2", source="no_such_source")


def test_embed_leaves_out_view_dumps_a_real_dataset_cannot_have(real_like, tmp_path):
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.config import EmbedParams
    from clapcap.encoders.embed import embed_all

    params = EmbedParams(out_dir=str(tmp_path / "emb"), datasets={"real": str(real_like)}, splits=["test"],
                         caption_columns=["captions", "paraphrases_v1", "paraphrases_v2"],
                         encoders={"logmel": EncoderConfig(name="logmel", backend="logmel_stats", batch_size=8)})
    paths = embed_all(params, "logmel", "real", progress=False)
    assert [p.name for p in paths] == ["test.npz"]
    assert sorted(p.name for p in (tmp_path / "emb/logmel/real").iterdir()) == ["test.npz"]
    n_test = int((pd.read_csv(real_like / "manifest.csv")["split"] == "test").sum())
    from clapcap.data.dump import load_dump

    assert load_dump(paths[0]).audio_embeds.shape[0] == n_test
    shutil.rmtree(tmp_path / "emb")
