"""The RobustCLAP params sections parse strictly; the CLI group runs; the registration rule."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from clapcap.cli import main
from clapcap.config import ConfigError, from_dict
from clapcap.experiments.robust.benchmark import should_register, should_register_on_verdicts
from clapcap.experiments.robust.config import RobustBenchParams
from clapcap.paraphrase.dataset import ParaphraseParams
from clapcap.robust.config import RobustTrainParams

PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"
SECTIONS = {"robust_paraphrase": ParaphraseParams, "robust_train": RobustTrainParams,
            "robust_control": RobustTrainParams, "robust_benchmark": RobustBenchParams}


def test_params_sections_parse_and_the_control_differs_only_in_its_losses():
    data = yaml.safe_load(PARAMS.read_text())
    parsed = {name: from_dict(cls, data[name], where=name) for name, cls in SECTIONS.items()}
    train, control = parsed["robust_train"], parsed["robust_control"]
    # The control is the same fine-tune with the paraphrase terms off (and its own output).
    assert (control.loss.w_view1, control.loss.w_view2, control.loss.w_align) == (0.0, 0.0, 0.0)
    assert control.loss.w_clip == train.loss.w_clip
    same = {k: v for k, v in vars(train).items() if k not in ("loss", "out_dir")}
    assert same == {k: v for k, v in vars(control).items() if k not in ("loss", "out_dir")}
    assert control.out_dir != train.out_dir
    bench = parsed["robust_benchmark"]
    assert {train.out_dir + "/model", control.out_dir + "/model"} <= set(bench.models.values())


def test_unknown_and_mistyped_keys_are_rejected():
    with pytest.raises(ConfigError, match="robust_train.loss.w_view3"):
        from_dict(RobustTrainParams, {"loss": {"w_view3": 1.0}}, where="robust_train")
    with pytest.raises(ConfigError, match="expected float"):
        from_dict(RobustTrainParams, {"optim": {"lr": "fast"}})
    with pytest.raises(ConfigError, match=r"unknown key\(s\) lr, seed .*did you mean optim.lr, optim.seed\?"):
        from_dict(RobustTrainParams, {"lr": 0.1, "seed": 3})  # a params file from before the optim block
    with pytest.raises(ConfigError, match="expected one of"):
        from_dict(ParaphraseParams, {"backend": "gpt"})


def test_cli_paraphrase_corpus_backend(tiny_corpus, tmp_path, capsys):
    params = tmp_path / "params.yaml"
    out = tmp_path / "para"
    params.write_text(yaml.safe_dump({"robust_paraphrase": {"dataset_dir": str(tiny_corpus), "out_dir": str(out),
                                                            "splits": ["train"], "track": False}}))
    assert main(["robust", "paraphrase", "--params", str(params), "--max-clips", "3"]) == 0
    assert "15 captions" in capsys.readouterr().out and (out / "manifest.csv").is_file()
    params.write_text("robust_train:\n  epoch: 3\n")
    assert main(["robust", "train", "--params", str(params)]) == 2
    assert "unknown key(s) robust_train.epoch" in capsys.readouterr().err


def _paired(view2: tuple[float, float], original: tuple[float, float]) -> dict:
    def cell(d, p):
        return {"t2a": {"r@10": {"difference": d, "p_value": p}}}

    return {"view2": cell(*view2), "original": cell(*original)}


@pytest.mark.parametrize("view2,original,expected", [
    ((0.10, 0.001), (0.01, 0.5), True),
    ((0.10, 0.001), (-0.01, 0.5), True),   # a non-significant loss on originals is allowed
    ((0.10, 0.001), (-0.05, 0.01), False),  # a significant loss is not
    ((0.10, 0.2), (0.0, 1.0), False),       # the gain must be significant
    ((-0.10, 0.001), (0.0, 1.0), False),
])
def test_registration_rule(view2, original, expected):
    decision, reason = should_register(_paired(view2, original), RobustBenchParams())
    assert decision is expected and reason


def _finding(fid: str, verdict: str) -> dict:
    return {"id": fid, "verdict": verdict, "effect": 0.1, "ci": {"low": 0.0, "high": 0.2},
            "n_seeds": {"a": 3, "b": 1}}


@pytest.mark.parametrize("win,guards,expected", [
    ("holds", ("within noise", "holds"), True),    # an unsettled "no loss" does not block
    ("holds", ("reversed", "holds"), False),       # a loss that holds over seeds does
    ("within noise", ("holds", "holds"), False),   # the gain must hold over seeds
    ("reversed", ("holds", "holds"), False),
])
def test_registration_on_seed_verdicts(win, guards, expected):
    params = RobustBenchParams(register_on="conclusions.json")
    findings = {params.register_finding: _finding(params.register_finding, win)}
    findings |= {g: _finding(g, v) for g, v in zip(params.register_guards, guards, strict=True)}
    decision, reason = should_register_on_verdicts(findings, params)
    assert decision is expected and params.register_finding in reason


def test_registration_names_a_missing_finding():
    params = RobustBenchParams(register_on="conclusions.json")
    with pytest.raises(ValueError, match="conclusions.json: no finding.*robust.original"):
        should_register_on_verdicts({params.register_finding: _finding(params.register_finding, "holds")}, params)
