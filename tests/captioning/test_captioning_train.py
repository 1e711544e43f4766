"""Two-stage captioner training: both decoders, result JSON, skip, resume, LR search."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from caption_fixtures import make_dump, tiny_model, tiny_train

from clapcap.captioning import train as cap_train
from clapcap.captioning.config import StageConfig
from clapcap.captioning.train import train_captioner
from clapcap.experiments.captioning.lr_search import (
    LRSearchConfig,
    chosen_learning_rates,
    search_learning_rates,
)
from clapcap.utils.io import read_json


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def dump(tiny_corpus, tmp_path_factory):
    return make_dump(tiny_corpus, tmp_path_factory.mktemp("cap_dump") / "dump.npz")


@pytest.mark.parametrize("decoder", ["gpt2", "t5"])
def test_two_stages_write_result_and_checkpoints(decoder, dump, tiny_corpus, tmp_path):
    res = train_captioner(tiny_model(decoder), tiny_train(seed=3), dump=dump, dataset_dir=tiny_corpus,
                          out_dir=tmp_path / "run", progress=False)
    saved = read_json(tmp_path / "run" / "result.json")
    assert saved["seed"] == 3 and saved["model"]["in_dim"] == 16 and saved["model"]["decoder"] == decoder
    assert [h["epoch"] for h in saved["stages"]["1"]["history"]] == [1, 2]
    assert [h["epoch"] for h in saved["stages"]["2"]["history"]] == [1]
    for stage in ("1", "2"):
        st = saved["stages"][stage]
        assert st["best_epoch"] in [h["epoch"] for h in st["history"]]
        assert all(h["train_loss"] > 0 and h["val_loss"] > 0 for h in st["history"])
        assert not (tmp_path / "run" / f"stage{stage}" / "last.pt").exists()
    assert res["checkpoint"].endswith("stage2/best")
    assert (tmp_path / "run" / "tokenizer" / "tokenizer.json").is_file()


def test_stage1_keeps_lm_frozen_and_stage2_trains_it(dump, tiny_corpus, tmp_path):
    from clapcap.captioning.model import load_captioner

    cfg = tiny_train(stages=[1])
    train_captioner(tiny_model(), cfg, dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "s1", progress=False)
    s1 = load_captioner(tmp_path / "s1" / "stage1" / "best")
    lm_init = torch.load(tmp_path / "s1" / "lm_pretrain" / "lm.pt", weights_only=True)  # per-run warm-up
    assert all(torch.equal(v, lm_init[k]) for k, v in s1.lm.state_dict().items())  # LM untouched
    res = train_captioner(tiny_model(), tiny_train(stages=[2]), dump=dump, dataset_dir=tiny_corpus,
                          out_dir=tmp_path / "s2", init_from=tmp_path / "s1" / "stage1" / "best",
                          progress=False)
    s2 = load_captioner(res["checkpoint"])
    assert any(not torch.equal(v, lm_init[k]) for k, v in s2.lm.state_dict().items())


def test_seed_changes_weights_but_same_seed_reproduces(dump, tiny_corpus, tmp_path):
    runs = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        runs[name] = train_captioner(tiny_model(), tiny_train(seed=seed, stages=[1], lm_pretrain_epochs=0,
                                                              stage1=StageConfig(epochs=1)),
                                     dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / name,
                                     progress=False)
    losses = {k: r["stages"]["1"]["history"][0]["train_loss"] for k, r in runs.items()}
    assert losses["a"] == pytest.approx(losses["b"], rel=1e-6)
    assert losses["a"] != pytest.approx(losses["c"], rel=1e-6)


def test_finished_run_is_skipped(dump, tiny_corpus, tmp_path, monkeypatch):
    kw = dict(dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "run", progress=False)
    first = train_captioner(tiny_model(), tiny_train(stages=[1], stage1=StageConfig(epochs=1)), **kw)
    monkeypatch.setattr(cap_train, "load_run_data", lambda *a, **k: pytest.fail("finished run retrained"))
    assert train_captioner(tiny_model(), tiny_train(stages=[1]), **kw) == first


def test_resume_after_crash_loses_at_most_the_current_epoch(dump, tiny_corpus, tmp_path, monkeypatch):
    real_epoch = cap_train._train_epoch
    calls = []

    def crashing(model, opt, split, cfg, seed, desc, progress, zero_audio=False, **kw):
        calls.append(desc)
        if desc.startswith("stage 1 epoch 3"):
            raise RuntimeError("simulated crash")
        return real_epoch(model, opt, split, cfg, seed, desc, progress, zero_audio, **kw)

    monkeypatch.setattr(cap_train, "_train_epoch", crashing)
    cfg = tiny_train(stages=[1], stage1=StageConfig(epochs=3, lr_projection=3e-3))
    kw = dict(dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "run", progress=False)
    with pytest.raises(RuntimeError, match="simulated crash"):
        train_captioner(tiny_model(), cfg, **kw)
    assert (tmp_path / "run" / "stage1" / "last.pt").is_file()
    calls.clear()
    monkeypatch.setattr(cap_train, "_train_epoch", real_epoch)
    resumed = train_captioner(tiny_model(), cfg, **kw)
    assert [h["epoch"] for h in resumed["stages"]["1"]["history"]] == [1, 2, 3]
    # An uninterrupted run gives the same history: resume restores weights, optimizer and RNG.
    fresh = train_captioner(tiny_model(), cfg, **{**kw, "out_dir": tmp_path / "fresh"})
    for a, b in zip(resumed["stages"]["1"]["history"], fresh["stages"]["1"]["history"], strict=True):
        assert a["val_loss"] == pytest.approx(b["val_loss"], rel=1e-5)


def test_bad_training_inputs(dump, tiny_corpus, tmp_path):
    kw = dict(dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "x", progress=False)
    with pytest.raises(ValueError, match="stages"):
        train_captioner(tiny_model(), tiny_train(stages=[2, 1]), **kw)
    with pytest.raises(ValueError, match="batch_size"):
        train_captioner(tiny_model(), tiny_train(batch_size=0), **kw)
    with pytest.raises(FileNotFoundError, match="dump not found"):
        train_captioner(tiny_model(), tiny_train(), **{**kw, "dump": tmp_path / "none.npz"})
    with pytest.raises(ValueError, match="differs"):
        first = train_captioner(tiny_model(), tiny_train(stages=[1], lm_pretrain_epochs=0,
                                                         stage1=StageConfig(epochs=1)), **kw)
        train_captioner(tiny_model(prefix_length=2), tiny_train(stages=[2]), init_from=first["checkpoint"],
                        **{**kw, "out_dir": tmp_path / "y"})


def test_lr_search_runs_grid_resumes_and_plots(dump, tiny_corpus, tmp_path, monkeypatch):
    search = LRSearchConfig(stage1_lrs=[1e-3, 1e-2], stage2_projection_lrs=[1e-3], stage2_lm_lrs=[1e-4, 1e-3],
                            stage1_epochs=1, stage2_epochs=1)
    train = dataclasses.replace(tiny_train(), lm_pretrain_epochs=0)
    kw = dict(dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / "lr")
    best = search_learning_rates(tiny_model(), train, search, **kw)
    assert best["stage1_lr_projection"] in search.stage1_lrs
    assert {t["lr_projection"] for t in best["stage1_trials"]} == set(search.stage1_lrs)
    assert len(best["stage2_trials"]) == 2 and best["stage2_lr_lm"] in search.stage2_lm_lrs
    assert (tmp_path / "lr" / "lr_search.png").stat().st_size > 1000
    assert best["at_grid_edge"] == []  # two-point grids: every choice is an edge, none is flagged
    assert chosen_learning_rates(tmp_path / "lr")["stage2_lr_lm"] == best["stage2_lr_lm"]
    # An interrupted search resumes: completed trials in the SQLite study are not rerun.
    (tmp_path / "lr" / "best.json").unlink()
    calls = []
    monkeypatch.setattr("clapcap.experiments.captioning.lr_search.train_captioner", lambda *a, **k: calls.append(k))
    again = search_learning_rates(tiny_model(), train, search, **kw)
    assert calls == [] and again["stage1_lr_projection"] == best["stage1_lr_projection"]
    # Finished with a study_path, the Optuna study (it holds trial times) leaves the output
    # folder, and best.json names no absolute path.
    (tmp_path / "lr" / "best.json").unlink()
    kept = tmp_path / "state" / "lr.db"
    done = search_learning_rates(tiny_model(), train, search, **kw, study_path=kept)
    assert kept.is_file() and not (tmp_path / "lr" / "optuna.db").exists() and done["study"] == str(kept)
    assert "storage" not in json.loads((tmp_path / "lr" / "best.json").read_text())


def test_grid_edges_flags_choices_on_the_boundary_of_three_point_grids():
    from clapcap.experiments.captioning.lr_search import grid_edges

    search = LRSearchConfig(stage1_lrs=[1e-3, 3e-3, 1e-2], stage2_projection_lrs=[3e-4, 1e-3],
                            stage2_lm_lrs=[1e-4, 1e-3, 3e-3])
    best = {"stage1_lr_projection": 1e-2, "stage2_lr_projection": 3e-4, "stage2_lr_lm": 1e-3}
    # stage 1 chose its largest LR; the 2-point projection grid is never flagged; 1e-3 is interior.
    assert grid_edges(best, search) == ["stage1_lr_projection"]
    assert grid_edges({**best, "stage1_lr_projection": 3e-3, "stage2_lr_lm": 1e-4}, search) == ["stage2_lr_lm"]
    assert grid_edges({**best, "stage1_lr_projection": 3e-3}, search) == []


def test_lm_warmup_is_keyed_by_caption_content_not_paths(dump, tiny_corpus, tmp_path):
    """Old code keyed the shared warm-up by the dump and data paths: an edited caption reused
    the stale warm-up, and a copy of the same data in another folder trained a second one."""
    import shutil

    from clapcap.data.manifest import read_manifest, write_manifest

    data, copy = tmp_path / "data", tmp_path / "elsewhere" / "data"
    for dest in (data, copy):
        shutil.copytree(tiny_corpus, dest, ignore=shutil.ignore_patterns("audio"))
    cache = tmp_path / "lm_warmup"
    cfg = tiny_train(stages=[1], stage1=StageConfig(epochs=1))

    def run(name, dataset_dir):
        train_captioner(tiny_model(), cfg, dump=dump, dataset_dir=dataset_dir, out_dir=tmp_path / name,
                        progress=False, lm_cache_dir=cache)
        return sorted(p.name for p in cache.glob("lm_*.pt"))

    first = run("a", data)
    assert len(first) == 1
    assert run("b", copy) == first  # same content elsewhere: shared
    df = read_manifest(data / "manifest.csv")
    row = df.index[df["split"] == "train"][0]
    df.at[row, "captions"] = ["a caption nobody wrote before", *df.at[row, "captions"][1:]]
    write_manifest(df, data / "manifest.csv")
    assert len(run("c", data)) == 2  # edited training caption: a new warm-up


def test_one_warm_up_is_shared_by_every_seed_with_lm_pretrain_seed(dump, tiny_corpus, tmp_path):
    """lm_pretrain_seed: 0 trains the caption-LM warm-up once for all training seeds; None
    warms up per seed."""
    for pretrain_seed in (0, None):
        cache = tmp_path / f"warm_{pretrain_seed}"
        for seed in (0, 1):
            cfg = tiny_train(stages=[1], stage1=StageConfig(epochs=1), seed=seed, lm_pretrain_seed=pretrain_seed)
            train_captioner(tiny_model(), cfg, dump=dump, dataset_dir=tiny_corpus, out_dir=tmp_path / f"{pretrain_seed}_{seed}",
                            progress=False, lm_cache_dir=cache)
        assert len(list(cache.glob("lm_*.pt"))) == (1 if pretrain_seed == 0 else 2)
