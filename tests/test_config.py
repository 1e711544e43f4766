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


# Every section of params.yaml and the class its stage loads it with.
SECTION_CLASSES = {
    "real_paraphrase_llm": "clapcap.paraphrase.dataset:ParaphraseParams",
    "real_robust_llm": "clapcap.experiments.real.robust:RealRobustParams",
    "pretrained_lms": "clapcap.captioning.pretrained_lms:PretrainedLMsParams",
    "metrics_summary": "clapcap.reporting.summary_metrics:MetricsSummaryParams",
    "caption_subsets": "clapcap.experiments.captioning.config:CaptionSubsetParams",
    "robust_view_source": "clapcap.experiments.robust.view_source:ViewSourceParams",
    "robust_views": "clapcap.experiments.robust.views:ViewCountParams",
    "robust_kinds": "clapcap.experiments.robust.kinds:KindStudyParams",
    "caption_vocab": "clapcap.experiments.captioning.vocab:CaptionVocabParams",
    "dcase_export": "clapcap.experiments.captioning.dcase:DcaseParams",
    "model_cards": "clapcap.reporting.model_card:ModelCardParams",
    "training_curves": "clapcap.reporting.curves:CurvesParams",
    "real_benchmark": "clapcap.experiments.real.recordings:RealBenchParams",
    "real_captioning": "clapcap.experiments.real.recordings:RealCaptionParams",
    "real_data": "clapcap.data.real_bench:RealDataParams",
    "real_corpus": "clapcap.data.corpus.assemble:CorpusParams",
    "real_clap": "clapcap.experiments.real.clap:RealClapParams",
    "caption_sbert": "clapcap.experiments.captioning.scores:CaptionScoreParams",
    "captioning": "clapcap.experiments.captioning.config:CaptioningParams",
    "checkpoint_identity": "clapcap.encoders.config:IdentityParams",
    "clap_variants": "clapcap.experiments.clap.variants:ClapVariantStudy",
    "compute": "clapcap.compute:ComputeParams",
    "data": "clapcap.data.config:DataParams",
    "embed": "clapcap.encoders.config:EmbedParams",
    "embed_pretrained": "clapcap.encoders.config:EmbedPretrainedParams",
    "music_subset": "clapcap.data.subset:SubsetParams",
    "real_subsets": "clapcap.data.subset:ColumnSubsetParams",
    "real_caption_vocab": "clapcap.experiments.captioning.vocab:CaptionVocabParams",
    "real_embed_pretrained": "clapcap.encoders.config:EmbedPretrainedParams",
    "pairwise": "clapcap.experiments.pairwise.study:PairwiseStudyParams",
    "reference": "clapcap.reference.config:ReferenceParams",
    "reference_baselines": "clapcap.reference.baselines:BaselineParams",
    "report": "clapcap.reporting.config:ReportParams",
    "report_inputs": "clapcap.reporting.collect:CollectParams",
    "retrieval": "clapcap.retrieval.config:RetrievalEvalParams",
    "robust_benchmark": "clapcap.experiments.robust.config:RobustBenchParams",
    "robust_control": "clapcap.robust.config:RobustTrainParams",
    "robust_paraphrase": "clapcap.paraphrase.dataset:ParaphraseParams",
    "robust_paraphrase_llm": "clapcap.paraphrase.dataset:ParaphraseParams",
    "real_paraphrase": "clapcap.paraphrase.dataset:ParaphraseParams",
    "real_robust": "clapcap.experiments.real.robust:RealRobustParams",
    "real_captioning_study": "clapcap.experiments.captioning.config:CaptioningParams",
    "real_caption_refs": "clapcap.experiments.real.captioning:RealCaptionRefsParams",
    "robust_seeds": "clapcap.experiments.robust.config:RobustSeedParams",
    "robust_text_store": "clapcap.robust.config:RobustTextStoreParams",
    "robust_train": "clapcap.robust.config:RobustTrainParams",
    "train_clap": "clapcap.clap.config:TrainClapParams",
}


def _class(spec: str) -> type:
    import importlib

    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def test_known_sections_are_the_repo_params_and_what_the_code_loads():
    """PARAMS_SECTIONS is exactly params.yaml's sections, covers every section a stage loads,
    and STUDIES is exactly the files studies/*.yaml."""
    import re

    from clapcap.compute import SECTION
    from clapcap.config import PARAMS_SECTIONS, STUDIES, read_params

    assert set(read_params(REPO / "params.yaml")) == PARAMS_SECTIONS | {"study"}
    assert set(SECTION_CLASSES) == PARAMS_SECTIONS
    pattern = re.compile(r'load_section\(\s*\w+,\s*"(\w+)"')
    loaded = {m for folder in ("src", "pipelines") for path in (REPO / folder).rglob("*.py")
              for m in pattern.findall(path.read_text())}
    assert loaded and loaded | {SECTION} <= PARAMS_SECTIONS
    assert set(STUDIES) == {p.stem for p in (REPO / "studies").glob("*.yaml")}


def test_repo_params_load_in_every_study(tmp_path):
    """The committed params.yaml, switched to each study, loads every section with the class of
    its stage (the top-level check included)."""
    import shutil

    from clapcap.config import STUDIES
    from clapcap.repro import apply_study

    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(REPO / "studies", tmp_path / "studies")
    for study in STUDIES:
        apply_study(tmp_path, study)
        for section, spec in SECTION_CLASSES.items():
            load_section(_class(spec), section, tmp_path / "params.yaml")


@pytest.mark.parametrize("text,expected", [
    ("data:\n  out_dir: x\nfoo: 1\n", "params.yaml:3: unknown top-level key(s) foo; allowed: caption_sbert, "),
    ("# a comment\ndatta:\n  out_dir: x\ndata: {}\n", "params.yaml:2: unknown top-level key(s) datta; allowed: "),
    ("study: reduce\ndata: {}\n",
     "params.yaml:1: study: expected one of ['full', 'reduced'] (a file studies/<name>.yaml), found 'reduce'"),
    ("data: {}\nstudy: [full]\n", "params.yaml:2: study: expected one of ['full', 'reduced']"),
])
def test_top_level_is_checked_whichever_section_is_loaded(tmp_path, monkeypatch, text, expected):
    from clapcap.retrieval.config import RetrievalEvalParams

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(text)
    for cls, section in ((DataParams, "data"), (RetrievalEvalParams, "retrieval")):
        with pytest.raises(ConfigError) as info:
            load_section(cls, section)
        assert str(info.value).startswith(expected)


def test_a_valid_study_is_accepted(tmp_path):
    for study in ("full", "reduced"):
        (tmp_path / "params.yaml").write_text(f"study: {study}\ndata:\n  out_dir: x\n")
        assert load_section(DataParams, "data", tmp_path / "params.yaml").out_dir == "x"


@pytest.mark.parametrize("text,expected", [
    ("data:\n  out_dir: x\n  split_fractions: {train: 0.5, val: 0.1, test: 0.2}\n",
     "params.yaml:3: data.split_fractions: expected fractions that sum to 1, found "
     "{'train': 0.5, 'val': 0.1, 'test': 0.2} (sum 0.8)"),
    ("data:\n  split_fractions:\n    train: 1.1\n    val: -0.1\n",
     "params.yaml:3: data.split_fractions.train: expected a fraction in [0, 1], found 1.1"),
    ("data:\n  split_fractions:\n    train: 0.9\n    val: .nan\n",
     "params.yaml:4: data.split_fractions.val: expected a fraction in [0, 1], found nan"),
])
def test_split_fractions_name_file_and_line(tmp_path, monkeypatch, text, expected):
    """Refused when the params are loaded, not later by prepare after synthesising the corpus."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_section(DataParams, "data")
    assert str(info.value) == expected


def test_cli_refuses_bad_split_fractions_before_any_work(tmp_path, capsys):
    from clapcap.cli import main

    params = tmp_path / "params.yaml"
    params.write_text(f"data:\n  out_dir: {tmp_path / 'corpus'}\n  split_fractions: {{train: 0.6, test: 0.2}}\n")
    assert main(["data", "prepare", "--params", str(params)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"clapcap: error: {params}:3: data.split_fractions: expected fractions that sum to 1, found "
                   "{'train': 0.6, 'test': 0.2} (sum 0.8)"]
    assert not (tmp_path / "corpus").exists()


def test_decoding_seeds_and_pretrained_lms_are_checked_at_load():
    from clapcap.captioning.pretrained_lms import PretrainedLMsParams
    from clapcap.experiments.captioning.config import CaptioningParams

    ok = from_dict(CaptioningParams, {"noise_seeds": [0, 1], "decoding_seeds": [1]})
    assert ok.decoding_seeds == [1] and from_dict(CaptioningParams, {}).decoding_seeds is None
    with pytest.raises(ConfigError, match=r"decoding_seeds: \[2\] are not noise_seeds"):
        from_dict(CaptioningParams, {"noise_seeds": [0, 1], "decoding_seeds": [2]})
    assert from_dict(PretrainedLMsParams, {"convert": {"gemma3": "models/g"}}).convert == {"gemma3": "models/g"}
    with pytest.raises(ConfigError, match="not pretrained LMs this project converts"):
        from_dict(PretrainedLMsParams, {"convert": {"llama": "models/l"}})
    with pytest.raises(ConfigError, match="no output folder"):
        from_dict(PretrainedLMsParams, {"convert": {"gemma3": " "}})
