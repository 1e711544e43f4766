"""RobustCLAP fine-tuning and benchmark end to end on the tiny corpus (tiny random base CLAP)."""

from __future__ import annotations

import json

import pytest
import torch
from optim_kw import params_with

from clapcap.experiments.robust.config import RobustBenchParams
from clapcap.paraphrase.dataset import ParaphraseParams, paraphrase_dataset
from clapcap.robust.config import MultiViewLossConfig, RobustTrainParams


@pytest.fixture(scope="module")
def robust_setup(tiny_corpus, tmp_path_factory):
    """Paraphrased corpus (corpus backend) + a saved tiny random base CLAP."""
    from clapcap.clap.model import (
        TinyClapConfig,
        build_tiny_clap,
        build_vocab,
        save_clap,
        tiny_preprocessing,
    )
    from clapcap.data.prepare import load_dataset

    root = tmp_path_factory.mktemp("robust")
    report = paraphrase_dataset(ParaphraseParams(dataset_dir=str(tiny_corpus), out_dir=str(root / "para")),
                                progress=False)
    assert report["n_views"]["view2"] == report["n_captions"]
    train = load_dataset(tiny_corpus).split("train")
    vocab = build_vocab(c for caps in train["captions"] for c in caps)
    cfg = TinyClapConfig()
    model, tok, fe = build_tiny_clap(cfg, vocab, seed=0)
    save_clap(model, tok, fe, root / "base", preprocessing=tiny_preprocessing(cfg))
    return root, train


def _train_params(root, **kw):
    base = dict(paraphrase_dir=str(root / "para"), base_model=str(root / "base"), out_dir=str(root / "robust"),
                epochs=1, batch_size=8, warmup_steps=1, track=False,
                loss=MultiViewLossConfig(view2_start_epoch=1))
    return params_with(RobustTrainParams, **{**base, **kw})


def test_train_resume_skip_and_benchmark(robust_setup, tmp_path, caplog):
    from clapcap.experiments.robust.benchmark import run_benchmark
    from clapcap.robust.train import train_robust_clap

    root, train = robust_setup
    first = train_robust_clap(_train_params(root), progress=False)
    assert len(first.history) == 1 and first.history[0]["loss"] > 0
    assert {"t2a_r@10", "view1_t2a_r@10", "view2_t2a_r@10"} <= set(first.history[0])
    from clapcap.clap.model import build_vocab

    train_words = set(build_vocab(t for col in ("captions", "paraphrases_v1", "paraphrases_v2")
                                  for texts in train[col] for t in texts))
    assert first.added_words and set(first.added_words) <= train_words  # train-split texts only
    (root / "robust" / "train_result.json").unlink()  # keep the 1-epoch checkpoint
    same = train_robust_clap(_train_params(root), progress=False)  # same params: resumed, nothing to train
    assert same.history == first.history
    (root / "robust" / "train_result.json").unlink()
    second = train_robust_clap(_train_params(root, epochs=2), progress=False)  # other params: trained afresh
    assert [h["epoch"] for h in second.history] == [1, 2] and second.history[0] != first.history[0]
    assert "belongs to another run (signature differs)" in caplog.text
    assert train_robust_clap(_train_params(root, epochs=2), progress=False).skipped

    params = RobustBenchParams(paraphrase_dir=str(root / "para"), out_dir=str(tmp_path / "bench"),
                               models={"CLAP": str(root / "base"), "RobustCLAP": second.model_dir},
                               n_resamples=50, track=False)
    result = run_benchmark(params)
    for name in ("CLAP", "RobustCLAP"):
        for bench in ("original", "view1", "view2"):
            t2a = result["models"][name][bench]["t2a"]
            assert 0 <= t2a["ci"]["r@10"]["low"] <= t2a["r@10"] <= t2a["ci"]["r@10"]["high"] <= 1
        zs = result["models"][name]["zero_shot"]
        assert 0 <= zs["map_norm_min@10"] <= 1 and "map@10" not in zs and 0 <= zs["accuracy"] <= 1 and zs["classes"]
    assert set(result["drops"]["CLAP"]) == {"view1", "view2"}
    assert "p_value" in result["paired"]["view2"]["t2a"]["r@10"]
    assert isinstance(result["register"]["decision"], bool)
    md = (tmp_path / "bench" / "benchmark.md").read_text()
    tex = (tmp_path / "bench" / "benchmark.tex").read_text()
    assert "| RobustCLAP |" in md and "View 2 (vocabulary) R@10" in md and "\\toprule" in tex
    assert json.loads((tmp_path / "bench" / "benchmark.json").read_text())["split"] == "test"
    assert (tmp_path / "bench" / "dumps" / "RobustCLAP__view2.npz").is_file()


def test_same_seed_gives_the_same_weights_whatever_the_global_rng_state(robust_setup, tmp_path):
    import torch
    from safetensors.torch import load_file

    from clapcap.robust.train import train_robust_clap

    root, _ = robust_setup
    torch.manual_seed(123)
    a = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "a")), progress=False)
    torch.rand(1000)  # consume the global generator: the run must not depend on it
    b = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "b")), progress=False)
    c = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "c"), seed=1), progress=False)
    assert a.added_words  # new token rows were initialised (randomly) in this run
    sd = [load_file(f"{r.model_dir}/model.safetensors") for r in (a, b, c)]
    assert all(torch.equal(sd[0][k], sd[1][k]) for k in sd[0])
    assert not all(torch.equal(sd[0][k], sd[2][k]) for k in sd[0])


@pytest.mark.slow
def test_tracked_train_and_registration(robust_setup, tmp_path, mlflow_uri, monkeypatch):
    """MLflow runs of both steps; the candidate is registered when the rule says so (forced here)."""
    import mlflow

    from clapcap.experiments.robust import benchmark
    from clapcap.tracked.robust import run_robust_benchmark, run_robust_train
    from clapcap.tracking import vocab as tracking_vocab

    root, _ = robust_setup
    res = run_robust_train(_train_params(root, out_dir=str(tmp_path / "robust"), track=True,
                                         experiment="t-robust"), progress=False)
    monkeypatch.setattr(benchmark, "should_register", lambda paired, params: (True, "forced"))
    params = RobustBenchParams(paraphrase_dir=str(root / "para"), out_dir=str(tmp_path / "bench"),
                               models={"CLAP": str(root / "base"), "RobustCLAP": res.model_dir},
                               n_resamples=20, experiment="t-robust", registered_model="t-robust-clap")
    result = run_robust_benchmark(params)
    assert result["register"]["version"] == 1
    client = mlflow.MlflowClient(mlflow_uri)
    assert int(client.get_model_version_by_alias("t-robust-clap", "champion").version) == 1
    runs = client.search_runs([client.get_experiment_by_name("t-robust").experiment_id])
    metrics = {k for r in runs for k in r.data.metrics}
    assert {"val/view2/t2a/r10", "test/view2/t2a/r10_p", "test/a2l/map_norm_min10", "test/view2/t2a/r10_drop"} <= metrics
    by_name = {r.info.run_name: r for r in runs}
    assert by_name["robust/benchmark/test/RobustCLAP"].data.metrics["test/t2a/r10"] >= 0  # one run per model
    for key in metrics:
        tracking_vocab.check_key(key)
    # Promotion on evidence: the same model again is a new version, not shown better than the
    # champion on view-2 t2a R@10, so it is @challenger and @champion stays on v1.
    again = run_robust_benchmark(params)
    assert again["register"]["version"] == 2 and again["register"]["alias"] == "challenger"
    assert int(client.get_model_version_by_alias("t-robust-clap", "champion").version) == 1
    tags = client.get_model_version("t-robust-clap", "2").tags
    assert tags["clapcap.decision"] == "challenger" and tags["clapcap.compared_to"] == "1"
    assert tags["clapcap.metric"] == "t2a/r@10" and float(tags["clapcap.difference"]) == 0.0


def test_sigkill_mid_epoch_resumes_after_the_last_checkpoint_bit_for_bit(robust_setup, tmp_path, sigkill_at):
    from clapcap.config import to_dict
    from clapcap.robust.train import train_robust_clap

    root, _ = robust_setup
    killed = _train_params(root, out_dir=str(tmp_path / "killed"), epochs=3)
    # 28 train clips in batches of 8: 4 steps an epoch, so step 6 is in the middle of epoch 2.
    sigkill_at("robust", to_dict(killed), at="train_step", n=6)
    state = torch.load(tmp_path / "killed" / "checkpoints" / "last.pt", map_location="cpu", weights_only=False)
    assert [row["epoch"] for row in state["history"]] == [1]
    assert not (tmp_path / "killed" / "train_result.json").exists()

    trained = []
    resumed = train_robust_clap(killed, progress=False, on_epoch_end=lambda epoch, _row: trained.append(epoch))
    assert trained == [2, 3]  # only epoch 2, in flight at the kill, is redone
    reference = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "reference"), epochs=3),
                                  progress=False)
    strip = [[{k: v for k, v in row.items() if k != "seconds"} for row in r.history] for r in (resumed, reference)]
    assert strip[0] == strip[1] and resumed.added_words == reference.added_words
    weights = [(tmp_path / name / "model" / "model.safetensors").read_bytes() for name in ("killed", "reference")]
    assert weights[0] == weights[1]


def test_collapsed_fine_tune_raises_and_keeps_its_weights(robust_setup, tmp_path, collapse_fit, caplog):
    from clapcap.clap.train import TrainingCollapsed
    from clapcap.robust.train import train_robust_clap

    root, _ = robust_setup
    ok = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "ok")), progress=False)
    assert not ok.skipped and "too small to test training against chance (4 clips" in caplog.text  # 4 val clips
    collapse_fit()
    out = tmp_path / "collapsed"
    with pytest.raises(TrainingCollapsed, match=r"on the train split, t2a MRR .* p = 1,"):
        train_robust_clap(_train_params(root, out_dir=str(out), eval_split="train"), progress=False)
    assert (out / "model" / "model.safetensors").is_file() and (out / "collapsed.json").is_file()
    assert not (out / "train_result.json").exists()


def test_paraphrased_dataset_records_no_absolute_path(robust_setup, tiny_corpus):
    """dataset.json holds the audio root relative to itself, and every clip still resolves."""
    import json

    from clapcap.data.prepare import load_dataset

    root, _ = robust_setup
    info = json.loads((root / "para" / "dataset.json").read_text())
    assert not info["root"].startswith("/")
    ds = load_dataset(root / "para")
    assert ds.root == tiny_corpus.resolve()
    assert all(ds.audio_path(c).is_file() for c in ds.manifest["clip_id"][:5])


def test_seed_study_writes_findings_over_seeds(robust_setup, tmp_path):
    """Two fine-tune seeds of the candidate and the control; every finding tested over both."""
    import json

    from clapcap.evaluation.seed_bootstrap import VERDICTS
    from clapcap.experiments.robust.config import RobustSeedParams
    from clapcap.experiments.robust.seeds import run_seed_study
    from clapcap.robust.train import train_robust_clap

    root, _ = robust_setup
    cand = _train_params(root, out_dir=str(tmp_path / "cand"))
    ctrl = _train_params(root, out_dir=str(tmp_path / "ctrl"),
                         loss=MultiViewLossConfig(w_view1=0.0, w_view2=0.0, w_align=0.0))
    for params in (cand, ctrl):
        train_robust_clap(params, progress=False)
    bench = RobustBenchParams(paraphrase_dir=str(root / "para"), out_dir=str(tmp_path / "bench"), track=False,
                              models={"CLAP": str(root / "base"), "RobustCLAP": str(tmp_path / "cand" / "model"),
                                      "Control": str(tmp_path / "ctrl" / "model")})
    study = RobustSeedParams(seeds=[0, 1], out_dir=str(tmp_path / "seeds"), results_dir=str(tmp_path / "res"),
                             conclusions=str(tmp_path / "conclusions.json"), findings_md=str(tmp_path / "f.md"),
                             control="Control", n_resamples=200)
    findings = run_seed_study(cand, ctrl, bench, study, progress=False)
    assert (tmp_path / "seeds" / "candidate" / "seed1" / "model").is_dir()
    assert (tmp_path / "seeds" / "control" / "seed1" / "model").is_dir()
    assert not (tmp_path / "seeds" / "candidate" / "seed0").exists()  # seed 0 is robust_train's model
    written = json.loads((tmp_path / "conclusions.json").read_text())["findings"]
    assert [f["id"] for f in written] == sorted(f["id"] for f in findings) and len(written) == 5
    for f in written:
        assert f["verdict"] in VERDICTS and f["seeds"]["a"] == [0, 1]
        assert f["ci"]["low"] <= f["effect"] <= f["ci"]["high"]
    by_id = {f["id"]: f for f in written}
    assert by_id["robust.view2.t2a_r10.vs_control"]["paired_seeds"] is True
    assert by_id["robust.original.t2a_r10.vs_base"]["margin"] == 0.02
    assert by_id["robust.original.t2a_r10.vs_base"]["noise_floors"] == {"b": 0.0}
    assert "| **" in (tmp_path / "f.md").read_text()

    # The real benchmark scores the same seed models (found, not retrained) on another dataset.
    from clapcap.data.prepare import load_dataset
    from clapcap.experiments.real.recordings import RealBenchParams, run_real_retrieval

    real = RealBenchParams(dataset_dir=str(root / "para"), out_dir=str(tmp_path / "real"),
                           conclusions=str(tmp_path / "real.json"), findings_md=str(tmp_path / "real.md"))
    result = run_real_retrieval(real, bench, study, cand, ctrl)
    n = len(load_dataset(root / "para").split("test"))
    assert result["chance"]["r@10"]["t2a"] == pytest.approx(min(10, n) / n)
    real_found = {f["id"]: f for f in json.loads((tmp_path / "real.json").read_text())["findings"]}
    assert {"real.clap.t2a_r10.vs_chance", "real.robustclap.a2t_r10.vs_chance", "real.control.t2a_r10.vs_chance",
            "real.robust.view2.t2a_r10.vs_control", "real.robust.zero_shot.map10.vs_base"} <= set(real_found)
    assert real_found["real.robust.view2.t2a_r10.vs_control"]["seeds"]["a"] == [0, 1]
    same = by_id["robust.view2.t2a_r10.vs_control"]  # same models, same test split: same effect
    assert real_found["real.robust.view2.t2a_r10.vs_control"]["effect"] == pytest.approx(same["effect"])
    assert result["register"]["decision"] is False

    # Which words hurt: the same seed models on the event / attribute / structure views.
    from clapcap.experiments.robust.kinds import KindStudyParams, run_kind_study

    kinds = KindStudyParams(views_dir=str(tmp_path / "kviews"), out_dir=str(tmp_path / "kinds"),
                            conclusions=str(tmp_path / "kinds.json"), findings_md=str(tmp_path / "kinds.md"))
    out = run_kind_study(bench, study, cand, ctrl, kinds)
    assert set(out["models"]) == {"CLAP", "RobustCLAP", "Control"}
    assert out["models"]["RobustCLAP"]["events"]["per_seed"].keys() == {"0", "1"}
    for res in out["models"].values():
        for kind in ("events", "attributes", "structure"):
            low, high = res[kind]["drop_ci"]
            assert low <= res[kind]["drop"] <= high
            assert res[kind]["drop"] == pytest.approx(res[kind]["mean"] - res["original"]["mean"])
    kind_found = {f["id"]: f for f in json.loads((tmp_path / "kinds.json").read_text())["findings"]}
    assert len(kind_found) == 10 and kind_found["robust.kinds.events.drop_vs_control"]["paired_seeds"] is True
    base_drop = kind_found["robust.kinds.events.base_drop"]
    assert base_drop["effect"] == pytest.approx(out["models"]["CLAP"]["events"]["drop"])

    # How many views: one-view fine-tunes against the two-view seeds (found, not retrained).
    from clapcap.experiments.robust.views import ViewCountParams, run_view_count_study

    views = ViewCountParams(out_dir=str(tmp_path / "views"), results_dir=str(tmp_path / "vres"),
                            conclusions=str(tmp_path / "views.json"), findings_md=str(tmp_path / "views.md"))
    res = run_view_count_study(cand, bench, study, views, progress=False)
    assert (tmp_path / "views" / "view2_only" / "seed1" / "model").is_dir()
    assert set(res["models"]) == {"two views", "view1_only", "view2_only"}
    two = res["models"]["two views"]["view2"]["per_seed"]
    views_found = {f["id"]: f for f in json.loads((tmp_path / "views.json").read_text())["findings"]}
    assert len(views_found) == 2 * len(bench.benchmarks) and views_found["robust.views.two_vs_view2_only.view2"]["paired_seeds"]
    effect = views_found["robust.views.two_vs_view1_only.view2"]["per_seed_effects"]
    assert effect["0"] == pytest.approx(two["0"] - res["models"]["view1_only"]["view2"]["per_seed"]["0"])
    with pytest.raises(ValueError, match="unknown loss keys"):
        ViewCountParams(variants={"x": {"w_view3": 1.0}})


def test_seed_study_refuses_bad_params(robust_setup, tmp_path):
    from clapcap.experiments.robust.config import RobustSeedParams
    from clapcap.experiments.robust.seeds import run_seed_study

    with pytest.raises(ValueError, match="2 or more distinct seeds"):
        RobustSeedParams(seeds=[0])
    root, _ = robust_setup
    bench = RobustBenchParams(models={"CLAP": "a", "RobustCLAP": "b"}, track=False)
    with pytest.raises(ValueError, match="'CLAP-captions-FT' is not one of"):
        run_seed_study(_train_params(root), _train_params(root), bench, RobustSeedParams(), progress=False)
    with pytest.raises(ValueError, match="pairs them seed by seed"):
        run_seed_study(_train_params(root), _train_params(root, seed=3),
                       RobustBenchParams(models={"CLAP": "a", "RobustCLAP": "b", "CLAP-captions-FT": "c"},
                                         track=False), RobustSeedParams(), progress=False)


def test_fine_tune_of_a_pretrained_text_tower_trains_only_its_top_layers(robust_setup, tmp_path):
    """A MiniLM base: text_trainable_layers 0 leaves the tower as it was (its outputs stored
    once per text and read back by the next fine-tune), 1 trains the top layer only."""
    from clapcap.clap.minilm import build_minilm_clap
    from clapcap.clap.model import TinyClapConfig, load_clap, save_clap
    from clapcap.pretrained.assets import minilm_dir
    from clapcap.robust.train import train_robust_clap

    root, _ = robust_setup
    model, tok, fe = build_minilm_clap(TinyClapConfig(), minilm_dir(), seed=0)
    save_clap(model, tok, fe, tmp_path / "base", preprocessing={"mel_floor_db": TinyClapConfig().mel_floor_db})
    base = {k: v.clone() for k, v in model.text_model.state_dict().items()}
    cache = tmp_path / "cache"
    common = dict(base_model=str(tmp_path / "base"), collapse_alpha=0.0, feature_cache=str(cache))
    frozen = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "frozen"), text_trainable_layers=0,
                                             **common), progress=False)
    assert frozen.added_words == []  # a WordPiece tower needs no new words
    tuned = load_clap(frozen.model_dir)[0].text_model.state_dict()
    assert all(torch.equal(tuned[k], v) for k, v in base.items())
    assert len(list(cache.glob("frozen_text_*.pt"))) == 1
    top = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "top1"), text_trainable_layers=1,
                                          text_lr=1e-3, **common), progress=False)
    tuned = load_clap(top.model_dir)[0].text_model.state_dict()
    changed = {k for k, v in base.items() if not torch.equal(tuned[k], v)}
    assert changed and all(k.startswith(("encoder.layer.5.", "pooler.")) for k in changed)
    with pytest.raises(ValueError, match="text_trainable_layers"):
        _train_params(root, text_trainable_layers=-2)


def test_text_store_stage_feeds_the_fine_tunes_read_only(robust_setup, tmp_path, caplog):
    """robust_text_store computes every train/val caption and view once; a fine-tune reading
    it computes no text and leaves it unchanged, and ends with the same weights as one that
    computes its texts itself and validates every epoch (the frozen layers' output does not
    depend on the batch, and validation does not touch training)."""
    from frozen_text_calls import counting_computes  # tests/support

    from clapcap.clap import frozen_text
    from clapcap.clap.minilm import build_minilm_clap
    from clapcap.clap.model import TinyClapConfig, load_clap, save_clap
    from clapcap.pretrained.assets import minilm_dir
    from clapcap.robust.config import RobustTextStoreParams
    from clapcap.robust.text_store import build_text_store, store_texts
    from clapcap.robust.train import train_robust_clap

    root, _ = robust_setup
    model, tok, fe = build_minilm_clap(TinyClapConfig(), minilm_dir(), seed=0)
    save_clap(model, tok, fe, tmp_path / "base", preprocessing={"mel_floor_db": TinyClapConfig().mel_floor_db})
    texts = store_texts(root / "para", ["train", "val"])
    assert "" in texts and len(texts) == len(set(texts)) > 10
    record = build_text_store(RobustTextStoreParams(paraphrase_dir=str(root / "para"), base_model=str(tmp_path / "base"),
                                                    out_dir=str(tmp_path / "store")), progress=False)
    (name, info), = record["files"].items()
    store = tmp_path / "store" / name
    assert info["n_texts"] >= len(set(texts)) - 1 and store.is_file()  # distinct token sequences
    before = store.stat().st_mtime_ns, store.read_bytes()
    common = dict(base_model=str(tmp_path / "base"), collapse_alpha=0.0, text_trainable_layers=0, epochs=2,
                  eval_every=2)
    with counting_computes() as calls:
        stored = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "a"), text_store=str(tmp_path / "store"),
                                                 **common), progress=False)
    assert calls == [] and (store.stat().st_mtime_ns, store.read_bytes()) == before
    assert [sorted(k for k in row if k.startswith("t2a")) != [] for row in stored.history] == [False, True]
    alone = train_robust_clap(_train_params(root, out_dir=str(tmp_path / "b"), **{**common, "eval_every": 1}),
                              progress=False)  # validated after every epoch: the same weights
    a, b = (load_clap(r.model_dir)[0].state_dict() for r in (stored, alone))
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)
    with pytest.raises(ValueError, match="no frozen text layer"):
        frozen_text.fill_store(load_clap(tmp_path / "base")[0], tok, -1, texts, tmp_path / "x")
    with pytest.raises(ValueError, match="eval_every"):
        _train_params(root, eval_every=0)
    with pytest.raises(ValueError, match="text_trainable_layers"):
        RobustTextStoreParams(text_trainable_layers=[-1])


def _llm_manifest(root, tmp_path, n_clips=6):
    """An LLM stage's output in the real format: the first train clips with their first caption,
    views rewritten from the caption, one view1 dropped (null)."""
    from clapcap.data.manifest import write_manifest
    from clapcap.data.prepare import load_dataset
    from clapcap.utils.io import write_json

    ds = load_dataset(root / "para")
    df = ds.split("train").head(n_clips).copy()
    df["captions"] = [caps[:1] for caps in df["captions"]]
    df["paraphrases_v1"] = [[None if i == 0 else f"Heard here: {caps[0].lower()}"] for i, caps in
                            enumerate(df["captions"])]
    df["paraphrases_v2"] = [[f"One perceives {caps[0].lower()}"] for caps in df["captions"]]
    out = tmp_path / "llm"
    write_manifest(df, out / "manifest.csv")
    write_json(out / "dataset.json", {"root": str(ds.root)})
    return out


def test_view_source_study_trains_each_source_on_the_same_captions(robust_setup, tmp_path):
    """The LLM's views, the lexicon's views of the same captions (masked alike) and no views,
    over two seeds; the findings pair the seeds."""
    from clapcap.data.prepare import load_dataset
    from clapcap.experiments.robust.config import RobustSeedParams
    from clapcap.experiments.robust.view_source import (
        ViewSourceParams,
        matched_epochs,
        run_view_source_study,
    )

    root, train = robust_setup
    llm_dir = _llm_manifest(root, tmp_path)
    cand = _train_params(root)
    ctrl = _train_params(root, loss=MultiViewLossConfig(w_view1=0.0, w_view2=0.0, w_align=0.0))
    bench = RobustBenchParams(paraphrase_dir=str(root / "para"), out_dir=str(tmp_path / "bench"), track=False,
                              models={"CLAP": str(root / "base")})
    study = RobustSeedParams(seeds=[0, 1], n_resamples=200)
    params = ViewSourceParams(llm_dir=str(llm_dir), lexicon_dir=str(root / "para"),
                              manifests_dir=str(tmp_path / "man"), out_dir=str(tmp_path / "models"),
                              results_dir=str(tmp_path / "res"), conclusions=str(tmp_path / "c.json"),
                              findings_md=str(tmp_path / "f.md"))
    result = run_view_source_study(cand, ctrl, bench, study, params, progress=False)

    llm = load_dataset(tmp_path / "man" / "llm").manifest
    lex = load_dataset(tmp_path / "man" / "lexicon").manifest
    para = load_dataset(root / "para").manifest.set_index("clip_id")
    assert (llm["split"] == "train").sum() == 6 and list(llm["captions"]) == list(lex["captions"])
    assert (llm["split"] == "val").sum() == (para["split"] == "val").sum()
    first = llm[llm["split"] == "train"].iloc[0]
    assert first["paraphrases_v1"] == [None] and lex.iloc[0]["paraphrases_v1"] == [None]  # masked alike
    second = lex[lex["split"] == "train"].iloc[1]
    assert second["paraphrases_v2"] == para.at[second["clip_id"], "paraphrases_v2"][:1]  # the lexicon's own view
    assert result["subset"] == {"n_clips": 6, "n_captions": 6, "n_views": {"view1": 5, "view2": 6}}
    # robust_train: 1 epoch of 28 clips in batches of 8 = 4 steps; the 6 clips make 1 batch an epoch.
    assert len(train) == 28 and result["epochs"] == matched_epochs(cand, len(train), 6) == 4
    for source in ("llm", "lexicon", "none"):
        assert (tmp_path / "models" / source / "seed1" / "model").is_dir()
    assert set(result["models"]) == {"CLAP", "fine-tune (LLM views)", "fine-tune (lexicon views)",
                                     "fine-tune (no views)"}
    found = {f["id"]: f for f in json.loads((tmp_path / "c.json").read_text())["findings"]}
    assert all(f["paired_seeds"] and f["seeds"]["a"] == [0, 1] for f in found.values())
    assert len(found) == 4 and not any(".heldout." in i for i in found)  # this benchmark has no held-out view
    per_seed = found["robust.view_source.llm.view2.vs_none"]["per_seed_effects"]
    rows = result["models"]
    assert per_seed["1"] == pytest.approx(rows["fine-tune (LLM views)"]["view2"]["per_seed"]["1"]
                                          - rows["fine-tune (no views)"]["view2"]["per_seed"]["1"])
    assert found["robust.view_source.llm.original.vs_none"]["margin"] == study.margin

    # A rerun trains nothing; an LLM manifest without training captions is refused.
    again = run_view_source_study(cand, ctrl, bench, study, params, progress=False)
    assert again["models"] == result["models"]
    no_train = load_dataset(llm_dir).manifest
    no_train["split"] = "test"
    from clapcap.data.manifest import write_manifest

    write_manifest(no_train, llm_dir / "manifest.csv")
    with pytest.raises(ValueError, match="no train clips; .*add train to robust_paraphrase_llm.splits"):
        run_view_source_study(cand, ctrl, bench, study, params, progress=False)


def test_robustclap_fine_tunes_a_published_clap_named_by_hub_id(robust_setup, tmp_path, monkeypatch):
    """robust_train.base_model: a hub id (offline, from the cache) of the published architecture
    (HTSAT + RoBERTa BPE): it fine-tunes, and the result records the snapshot's commit."""
    import huggingface_hub.constants as constants
    from published_clap import build_published_clap, put_in_hub_cache  # tests/support

    from clapcap.robust.train import train_robust_clap

    root, _ = robust_setup
    commit = "8fa0f1c6d0433df6e97c127f64b2a1d6c0dcda8a"
    put_in_hub_cache(build_published_clap(tmp_path / "pub"), tmp_path / "hub", "laion/clap-htsat-unfused", commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    result = train_robust_clap(_train_params(root, base_model="laion/clap-htsat-unfused",
                                             out_dir=str(tmp_path / "robust")), progress=False)
    assert result.history[0]["loss"] > 0 and result.added_words == []  # a BPE tokenizer is not extended
    assert result.base_checkpoint == {"checkpoint": "laion/clap-htsat-unfused", "checkpoint_kind": "hub",
                                      "checkpoint_revision": commit}
    saved = json.loads((tmp_path / "robust" / "train_result.json").read_text())
    assert saved["base_checkpoint"]["checkpoint_revision"] == commit
    with pytest.raises(FileNotFoundError, match="run train_clap first, or point robust_train.base_model"):
        train_robust_clap(_train_params(root, base_model=str(tmp_path / "nope"), out_dir=str(tmp_path / "r2")),
                          progress=False)
