"""The one study switch: params.yaml is the reduced grid; studies/full.yaml switches to the
whole grid and studies/reduced.yaml back, and both parse as typed params and as DVC stages."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clapcap.config import ConfigError, load_section
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.study import encoder_specs
from clapcap.experiments.clap.variants import ClapVariantStudy
from clapcap.paraphrase.dataset import ParaphraseParams
from clapcap.repro import apply_study, study_overrides

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path):
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "studies", tmp_path / "studies")
    return tmp_path


def _get(data: dict, key: str):
    for part in key.split("."):
        data = data[part]
    return data


def test_params_yaml_is_the_reduced_study_and_the_switch_is_reversible(project):
    committed = (project / "params.yaml").read_text()
    params = yaml.safe_load(committed)
    assert params["study"] == "reduced"
    full = yaml.safe_load((project / "studies/full.yaml").read_text())
    reduced = yaml.safe_load((project / "studies/reduced.yaml").read_text())
    assert set(full) == set(reduced), "each study must set the same keys, or switching back leaves some behind"
    assert all(_get(params, k) == v for k, v in reduced.items())
    apply_study(project, "full")
    switched = yaml.safe_load((project / "params.yaml").read_text())
    assert switched["study"] == "full"
    assert all(_get(switched, k) == v for k, v in full.items())
    touched = {"study", *(k.split(".")[0] for k in full)}  # the other sections stay as they are
    assert {k: v for k, v in switched.items() if k not in touched} == \
        {k: v for k, v in params.items() if k not in touched}
    assert {"captioning", "clap_variants", "train_clap", "embed", "robust_train", "robust_control"} <= touched
    apply_study(project, "reduced")
    assert (project / "params.yaml").read_text() == committed  # byte for byte: comments and layout kept


def test_both_studies_load_as_typed_params(project):
    for study in ("full", "reduced"):
        apply_study(project, study)
        cap = load_section(CaptioningParams, "captioning", project / "params.yaml")
        variants = load_section(ClapVariantStudy, "clap_variants", project / "params.yaml")
        llm = load_section(ParaphraseParams, "robust_paraphrase_llm", project / "params.yaml")
        real = load_section(CaptioningParams, "real_captioning_study", project / "params.yaml")
        rows = {real.train[lm].train_clips for lm in ("gpt2", "smollm2")}
        if study == "full":
            assert rows == {0} and cap.lm_seeds == {"smollm2": [0, 1, 2], "t5": [0, 1, 2]}  # every training clip
            assert cap.lms == ["gpt2", "t5", "smollm2"] and cap.lr_search_lms == ["gpt2", "t5"]
            assert llm.max_clips is None and llm.captions_per_clip is None  # every caption: the LLM views in full
            assert cap.arch_lms == ["gpt2", "t5"] and cap.decoding_configs is None
            assert len(encoder_specs(cap)) == 9
            assert set(variants.variants) == {"frozen", "scratch"}
        else:
            assert cap.arch_lms == ["gpt2"] and "rep1.2" in cap.decoding_configs
            assert variants.variants == {}
            assert llm.max_clips == {"train": 32, "test": 4} and llm.captions_per_clip == {"train": 1}
            assert rows == {2000} and cap.lm_seeds == {"smollm2": [], "t5": []}  # one subset for both LMs
            # SmolLM2 captions the real corpus only; T5 is the full study's
            assert cap.lms == ["gpt2"] and cap.lr_search_lms == ["gpt2"]
            assert cap.encoder_seeds == [] and not encoder_specs(cap)


def test_the_full_study_adds_dvc_stages(project):
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run([*dvc, "init", "--no-scm", "-q"], cwd=project, check=True)

    def stages() -> set[str]:
        out = subprocess.run([*dvc, "stage", "list", "--name-only"], cwd=project, check=True,
                             capture_output=True, text=True).stdout
        return set(out.split())

    reduced = stages()
    assert {"train_clap", "music_subset", "caption_lm@0", "caption_lr_search@gpt2"} <= reduced
    assert not {"caption_arch@gpt2-prefix_length4", "caption_arch@t5-prefix_length4", "train_clap_variant@frozen",
                "robust_views@one_vs_two", "caption_encoder_music@0", "embed_pretrained@aisfx"} & reduced
    apply_study(project, "full")
    encoder_rows = {f"caption_encoder@{e}-{s}" for e in ("default", "frames_w2v", "logmel") for s in range(3)}
    variants = ["prefix_length4", "prefix_length16", "dropout0.3", "dropout0.5", "projection_depth1",
                "projection_depth3"]
    arch = {f"caption_arch@{lm}-{v}" for lm in ("gpt2", "t5") for v in variants} - reduced
    lr_checks = {f"caption_lr_check@{lm}-{v}" for lm in ("gpt2", "t5") for v in variants} - reduced
    assert len(lr_checks) == len(arch)  # every architecture row gets its own LR search
    assert stages() - reduced == {"train_clap_variant@frozen", "evaluate_clap_variant@frozen",
                                  "train_clap_variant@scratch", "evaluate_clap_variant@scratch",
                                  "embed@frames_w2v-corpus", "caption_smollm2@0", "caption_smollm2@1",
                                  "caption_smollm2@2", "caption_noise_floor@smollm2",
                                  "caption_lr_search@t5", "caption_noise_floor@t5",
                                  *(f"caption_t5@{s}" for s in range(3)),
                                  "robust_paraphrase_llm@llm", "robust_view_source@llm", "real_caption_smollm2@1",
                                  "real_caption_smollm2@2", "robust_views@one_vs_two",
                                  "pretrained_lm@gemma3", "real_paraphrase_llm@llm", "real_robust_llm@llm",
                                  *(f"real_caption_lr_check@{row}" for row in (
                                      "encoder_yamnet", "subset_speech_yamnet", "subset_speech_whisper_tiny_en",
                                      "subset_instruments_yamnet", "subset_instruments_crepe_tiny",
                                      "subset_effects_yamnet", "subset_effects_aisfx")),
                                  *(f"real_caption_lr_search@{lm}" for lm in ("t5", "smollm2", "gemma3")),
                                  *(f"real_caption_{row}@{s}" for row in ("t5", "gemma3", "decoding") for s in range(3)),
                                  *(f"caption_encoder_music@{s}" for s in range(3)),
                                  *(f"embed_pretrained@{e}" for e in ("aisfx", "whisper_tiny_en", "crepe_tiny")),
                                  *encoder_rows, *arch, *lr_checks}
    # Back to the reduced study: the full study's extra outputs are removed, nothing else.
    extra = [project / f"results/captioning/results/t5_{v}seed0.json" for v in ("dropout0.3_", "")]
    kept = project / "results/captioning/results/gpt2_seed0.json"
    for path in (*extra, kept, project / "models/clap_frozen/model/config.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    apply_study(project, "reduced")
    assert not any(p.exists() for p in extra) and not (project / "models/clap_frozen/model").exists()
    assert kept.exists()


def test_overrides_for_dvc_exp_run_and_unknown_studies(project):
    assert "captioning.arch_lms=[gpt2, t5]" in study_overrides(project, "full")
    assert "study=full" in study_overrides(project, "full")
    with pytest.raises(FileNotFoundError, match="known: full, reduced"):
        apply_study(project, "huge")
    (project / "studies/bad.yaml").write_text("nosuchsection.key: 1\n")
    with pytest.raises(ValueError, match="no mapping 'nosuchsection'"):
        apply_study(project, "bad")


@pytest.mark.parametrize("change, message", [
    ({"arch_lms": ["gpt3"]}, "arch_lms"),
    ({"decoding_configs": ["greedy", "rep1.2", "rep1.5", "ngram2", "warp9"]}, "'warp9' is not in decoding_ablation"),
    ({"decoding_configs": ["greedy", "rep1.2"]}, "the findings compare"),
])
def test_bad_grid_values_are_refused_at_load(project, change, message):
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["captioning"].update(change)
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises((ConfigError, ValueError), match=message):
        load_section(CaptioningParams, "captioning", project / "params.yaml")


@pytest.mark.parametrize("study", ["reduced", "full"])
def test_captioning_stages_declare_exactly_the_runs_they_write(project, study):
    """Each training run of the study is one stage's DVC output, and no stage declares a run
    that its command does not write (DVC fails such a stage after it ran)."""
    from dvc.repo import Repo

    from clapcap.experiments.captioning.study import all_specs

    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=project, check=True)
    apply_study(project, study)
    cap = load_section(CaptioningParams, "captioning", project / "params.yaml")
    with Repo(str(project)) as repo:
        declared = {Path(str(out.fs_path)).relative_to(project).as_posix() for stage in repo.index.stages
                    for out in stage.outs if "results/captioning/results/" in str(out.fs_path)}
    runs = {f"results/captioning/results/{s.name}.json" for s in all_specs(cap)}
    assert declared == runs
