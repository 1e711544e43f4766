"""build_report from fixture JSONs: sections, marking rules, missing inputs, MLflow logging."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clapcap.cli import main
from clapcap.reporting.report import SECTIONS, build_report

FIXTURES = Path(__file__).parent / "fixtures"


def _inputs(tmp_path: Path) -> dict:
    # The LLM and real-recordings sections read their stages' own files: tested in
    # tests/reporting/test_collect.py and tests/reporting/test_real_corpus.py.
    inputs = {key: FIXTURES / f"{key}.json" for key in SECTIONS
              if key not in ("llm_views", "pairwise", "real", "real_corpus")}
    # An LR-search figure made elsewhere (a PNG pointer) next to an Optuna result JSON.
    png_src = tmp_path / "made_elsewhere.png"
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    fig.savefig(png_src)
    plt.close(fig)
    pointer = tmp_path / "lr_png.json"
    pointer.write_text(json.dumps({"name": "encoder sweep", "png": "made_elsewhere.png"}))
    inputs["lr_search"] = [FIXTURES / "lr_search.json", pointer]
    # The architecture row "gpt2 prefix 4" states a finding: the table must show its numbers.
    fixture = json.loads((FIXTURES / "findings.json").read_text())
    arch = {**fixture["findings"][0], "id": "captioning.arch.gpt2.prefix 4", "effect": -0.0412,
            "ci": {"low": -0.0903, "high": 0.0071}, "verdict": "within noise",
            "statement": "prefix 4 improves the gpt2 captioner"}
    extra = tmp_path / "arch_findings.json"
    extra.write_text(json.dumps({**fixture, "findings": [arch]}))
    inputs["findings"] = [FIXTURES / "findings.json", extra]
    return inputs


def test_full_report_from_fixtures(tmp_path):
    out = tmp_path / "report"
    summary = build_report(_inputs(tmp_path), out)
    llm = {"llm_views", "pairwise", "real", "real_corpus"}
    assert all(s["status"] == "ok" for k, s in summary["sections"].items() if k not in llm)
    assert {summary["sections"][k]["status"] for k in llm} == {"not run"}
    md = (out / "report.md").read_text()
    tex = (out / "report.tex").read_text()
    # Reference comparison: leaky row daggered and never bold; best clean row bold.
    ref_md = (out / "tables" / "reference_comparison.md").read_text()
    assert "| captioner_leaky† | reference | 0.900 | 0.400 |" in ref_md
    assert "| gpt2-best | pipeline | **0.410** | 0.200 |" in ref_md
    assert "| t5-best | pipeline | 0.330 | **0.220** |" in ref_md
    assert r"captioner\_leaky$^\dagger$ & reference & 0.900 & 0.400" in tex
    # LM ablation: mean ± sample std over seeds, seed count shown.
    lm_md = (out / "tables" / "lm_ablation.md").read_text()
    assert "| gpt2 | 3 | **0.410 ± 0.010** |" in lm_md and "| t5 | 3 | 0.330 ± 0.030 |" in lm_md
    # Arch ablation: a row's comparison is its finding's (one number, one interval convention);
    # the findings table says the same; a row without a finding gets no second definition.
    arch_md = (out / "tables" / "arch_ablation.md").read_text()
    row = "| gpt2 prefix 4 | gpt2 |  | captioning.arch.gpt2.prefix 4 | -0.041 [-0.090, +0.007] | within noise |"
    assert row in arch_md
    assert "| prefix 4 improves the gpt2 captioner (cider_d, greater) | -0.041 [-0.090, +0.007] |" in md
    assert "| gpt2 prefix 16 | gpt2 |  |  |  | no finding |" in arch_md
    assert "| t5 dropout 0.5 | t5 |  |  |  | no finding |" in arch_md
    # Retrieval in the leaderboard: our synthetic-corpus row is marked not comparable.
    lb_md = (out / "tables" / "retrieval_leaderboard.md").read_text()
    assert "| tiny-clap [clapcap] ‡ |" in lb_md and "| fixture-audiocaps [clapcap] | 12 |" in lb_md
    assert "| LAION-CLAP | 17 | unspecified | Modality=t2a | 2026.04 |" in lb_md
    assert "evaluated on synthetic, not AudioCaps: not comparable" in lb_md
    assert "| 23.00 | 60.00 | 95.00 | 40.00 |" in lb_md
    assert "**" not in lb_md
    # Findings: every finding of the conclusions file with its interval and verdict, counted.
    assert "3 findings: 1 hold, 2 within noise, 0 reversed." in md
    assert "| the method beats the baseline (cider_d, greater) | +0.300 [+0.300, +0.300] |" in md
    assert "| 3 vs 3 | **within noise** |" in md
    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert figures == sorted(["findings.png", "lm_ablation.png", "arch_ablation.png", "decoding_ablation.png",
                              "encoder_ablation.png", "reference_comparison.png",
                              "lr_search_gpt2_stage_1.png", "lr_search_t5_stage_1.png",
                              "lr_search_encoder_sweep.png", "retrieval_leaderboard.png", "vocab.png",
                              "kinds.png", "views.png", "view_source.png"])
    assert all((out / "figures" / f).stat().st_size > 1000 for f in figures)
    assert "![lm_ablation](figures/lm_ablation.png)" in md and md.count("_Not run_") == 4
    assert "lr=0.001" in md
    # Vocabulary: the references' row, configurations over seeds, a reference captioner's row.
    vocab_md = (out / "tables" / "vocab.md").read_text()
    assert "| references (1000 captions) | 100.000 | 13.970 |" in vocab_md
    assert "| gpt2 (3 seeds, 200 clips) | 69.333 ± " in vocab_md and "| retrieval_captioner (200 clips) | 97.000 | 15.235 | 0.790 | 1.000 |" in vocab_md
    assert "SPIDEr-FL is not computed" in vocab_md
    # Which words hurt, and how many views: means over seeds per benchmark, from the stages' files.
    kinds_md = (out / "tables" / "kinds.md").read_text()
    assert "| CLAP | 0.747 | 0.360 | 0.478 | 0.709 |" in kinds_md and "151 event-sound clips" in kinds_md
    views_md = (out / "tables" / "views.md").read_text()
    assert "| view1_only | 0.720 | 0.724 | 0.162 | 0.099 |" in views_md.replace("**", "")
    source_md = (out / "tables" / "view_source.md").read_text().replace("**", "")
    assert "| fine-tune (LLM views) | 0.620 | 0.600 | 0.360 | 0.110 |" in source_md
    assert "| CLAP | 0.700 | 0.690 | 0.400 | 0.120 |" in source_md  # the base: one model, no seeds
    assert "the same 64 captions of 64 training clips" in source_md and "view1 25, view2 40" in source_md
    lr_md = (out / "tables" / "lr_check.md").read_text()
    assert "| gpt2_prefix_length4 | 0.003 / 0.001 | 0.001, 0.001 / 0.001, 0.001 | 0.0029 | – |" in lr_md
    assert "0 of 1 architecture rows choose exactly the baseline's learning rates." in md
    assert json.loads((out / "report.json").read_text()) == summary


def test_missing_inputs_say_not_run(tmp_path):
    out = tmp_path / "r"
    summary = build_report({"reference_comparison": FIXTURES / "reference_comparison.json",
                            "lm_ablation": tmp_path / "not_yet.json"}, out)
    sections = summary["sections"]
    assert sections["reference_comparison"]["status"] == "ok"
    assert sections["lm_ablation"] == {"status": "not run", "files": [],
                                       "reason": f"input not found: {tmp_path / 'not_yet.json'}"}
    assert sections["retrieval"]["reason"] == "no input given"
    md = (out / "report.md").read_text()
    assert md.count("_Not run_") == len(SECTIONS) - 1
    # The real corpus and the real recordings come right after the findings, before the
    # generated corpus's studies.
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads[:4] == ["## Findings over training seeds", "## Real corpus: thousands of real recordings",
                         "## Real recordings (no generator made them)", "## Language-model ablation with noise floors"]
    assert "% Retrieval in the AudioCaps text-to-audio leaderboard: not run" in (out / "report.tex").read_text()


def test_schema_errors_name_file_and_row(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"rows": [{"name": "a", "metrics": {"CIDEr": 1}}, {"name": "b", "metrics": {"CIDEr": "x"}}]}))
    with pytest.raises(ValueError, match=r"bad.json: rows\[1\]: metrics\['CIDEr'\] must be a finite number"):
        build_report({"encoder_ablation": bad}, tmp_path / "r")
    bad.write_text(json.dumps([{"name": "a", "leaky": "yes", "metrics": {}}]))
    with pytest.raises(ValueError, match=r"rows\[0\]: 'leaky' must be true or false"):
        build_report({"reference_comparison": bad}, tmp_path / "r")
    with pytest.raises(ValueError, match="unknown report section"):
        build_report({"captioning": bad}, tmp_path / "r")


def test_cli_build(tmp_path):
    out = tmp_path / "r"
    rc = main(["report", "build", "--reference-comparison", str(FIXTURES / "reference_comparison.json"),
               "--retrieval", str(FIXTURES / "retrieval.json"), "--out", str(out)])
    assert rc == 0 and (out / "figures" / "retrieval_leaderboard.png").is_file()
    assert "_Not run_" in (out / "report.md").read_text()


def test_figures_logged_to_mlflow(tmp_path, mlflow_uri):
    from clapcap import tracking
    from clapcap.tracked.report import build_report as tracked_build_report

    out = tmp_path / "r"
    tracked_build_report({"reference_comparison": FIXTURES / "reference_comparison.json",
                          "decoding_ablation": FIXTURES / "decoding_ablation.json"}, out)
    runs = tracking.search_runs("clapcap-report")
    assert len(runs) == 1 and runs.iloc[0]["status"] == "FINISHED"
    import mlflow

    artifacts = {a.path for a in mlflow.MlflowClient().list_artifacts(runs.iloc[0]["run_id"], "figures")}
    assert artifacts == {"figures/reference_comparison.png", "figures/decoding_ablation.png"}
    tables = {a.path for a in mlflow.MlflowClient().list_artifacts(runs.iloc[0]["run_id"], "tables")}
    assert "tables/reference_comparison.tex" in tables
    shutil.rmtree(out)


def test_the_committed_report_states_each_comparison_once():
    """The built report (reports/final) against reports/conclusions.json: every ablation row that
    names a finding shows that finding's effect, interval and verdict, as the findings table
    does; no table carries a second definition of a row's difference (the old seed-0 delta and
    2-sigma 'beyond' column contradicted the findings: ngram2, prefix_length4)."""
    import re

    root = Path(__file__).resolve().parents[2]
    findings = {f["id"]: f for f in json.loads((root / "reports/conclusions.json").read_text())["findings"]}
    report = (root / "reports/final/report.md").read_text()
    checked = 0
    for name in ("arch_ablation", "decoding_ablation", "encoder_ablation"):
        path = root / "reports/final/tables" / f"{name}.md"
        if not path.is_file():
            continue
        table = path.read_text()
        assert "beyond" not in table
        for fid, effect, verdict in re.findall(r"\| (captioning\.[^ |]+) \| ([^|]+) \| ([a-z ]+) \|", table):
            f = findings[fid]
            shown = f"{f['effect']:+.3f} [{f['ci']['low']:+.3f}, {f['ci']['high']:+.3f}]"
            assert effect.strip() == shown and verdict.strip() == f["verdict"], fid
            assert f"| {shown} |" in report  # the findings table states the same numbers
            checked += 1
    assert checked >= 3
