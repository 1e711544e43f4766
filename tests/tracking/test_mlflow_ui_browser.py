"""The MLflow UI itself, in a real headless Chromium, over a store the project's own tracking
code wrote: a tiny three-seed captioning study (one run per configuration, the seeds child runs
of a parent that holds their mean and std), served by ``mlflow server`` on 127.0.0.1.

Checks what a user compares in the UI: the captioning experiment's run table shows the
vocabulary's metric columns and nests the seeds under their parent; the comparison view of the
three seeds shows their names and their ``test/cider_d``.

Screenshots go to ``tmp_path``; with ``CLAPCAP_UPDATE_SCREENSHOTS=1`` they replace
``docs/images/mlflow_runs.png`` and ``docs/images/mlflow_compare_seeds.png`` (linked from the
README and docs/tracking.md). Run with ``make test-services`` (it starts a server).
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import services
from browser import chromium
from caption_fixtures import TINY_MODEL, fake_score_captions, make_dump

from clapcap.config import from_dict
from clapcap.experiments.captioning import study as exp
from clapcap.tracked.captioning import study_tracker

pytestmark = pytest.mark.services

REPO = Path(__file__).resolve().parents[2]
EXPERIMENT = "clapcap-captioning"
PARENT = "captioning/gpt2/baseline"
SEEDS = [0, 1, 2]
TRAIN = {"batch_size": 32, "lm_pretrain_epochs": 1, "stage1": {"epochs": 1, "lr_projection": 3e-3},
         "stage2": {"epochs": 1, "lr_projection": 1e-3, "lr_lm": 1e-3}}
VIEWPORT = {"width": 1600, "height": 900}
# The UI opens in its GenAI mode (an experiment overview of traces); this selects "Model training".
ML = "workflowType=machine_learning"
NAME_CELL = '.ag-row [col-id="attributes.`Run Name`"]'
WAIT_MS = 90_000  # the single-page app's first load on a busy machine


def _three_seed_study(corpus: Path, tmp_path: Path) -> None:
    """The captioning noise floor of a tiny gpt2 over three seeds, tracked (fake scorer)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        params = from_dict(exp.CaptioningParams, {
            "dataset_dir": str(corpus), "dump": str(make_dump(corpus, tmp_path / "dump.npz")),
            "out_dir": str(tmp_path / "out"), "models": {"gpt2": {"decoder": "gpt2", **TINY_MODEL}},
            "train": {"gpt2": TRAIN}, "lms": ["gpt2"], "use_lr_search": False, "noise_seeds": SEEDS,
            "track": True, "progress": False})
        exp.noise_floor(params, "gpt2", tracker=study_tracker(params))
    finally:
        torch.set_num_threads(threads)


def _shown(value: float) -> str:
    """A metric as the compare view prints it (JavaScript's Math.round to 3 decimals)."""
    rounded = math.floor(value * 1000 + 0.5) / 1000
    return str(int(rounded)) if rounded == int(rounded) else repr(rounded)


def _close_assistant(page) -> None:
    """Close the MLflow Assistant side panel (it opens by default and hides half the table)."""
    close = page.get_by_role("button", name="Close")
    if close.count():
        close.first.click()


def _shot_dir(tmp_path: Path) -> Path:
    if os.environ.get("CLAPCAP_UPDATE_SCREENSHOTS") == "1":
        out = REPO / "docs" / "images"
        out.mkdir(parents=True, exist_ok=True)
        return out
    return tmp_path


@pytest.fixture
def ui(tiny_corpus, tmp_path, monkeypatch):
    """The study's store served by ``mlflow server``; yields (server URL, runs by name).

    The server starts (20-40 s here) while the study trains; it is stopped by its PID.
    """
    import mlflow

    monkeypatch.setattr("clapcap.captioning.evaluate.score_captions", fake_score_captions)
    (tmp_path / "store").mkdir()
    uri = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.MlflowClient(uri).search_experiments()  # create the tables before the server opens them
    with ThreadPoolExecutor(1) as pool:
        starting = pool.submit(services.start_mlflow_server, backend_uri=uri, log_dir=tmp_path / "logs")
        server = None
        try:
            _three_seed_study(tiny_corpus, tmp_path)
            server = starting.result()
            runs = mlflow.search_runs(experiment_names=[EXPERIMENT], output_format="list")
            yield server.url, {r.info.run_name: r for r in runs}
        finally:
            if server is None:
                server = starting.result()  # raises ServiceError (server already stopped) if it failed
            server.stop()


def test_run_table_and_seed_comparison_in_browser(ui, tmp_path):
    base, runs = ui
    seeds = [runs[f"{PARENT}/seed{s}"] for s in SEEDS]
    parent = runs[PARENT]
    exp_id = parent.info.experiment_id
    assert len(runs) == 4 and all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in seeds)
    shots = _shot_dir(tmp_path)

    with chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        # The run table: one row per configuration, its seeds folded under it.
        page.goto(f"{base}/#/experiments/{exp_id}/runs?{ML}")
        page.wait_for_selector(f"{NAME_CELL} >> text={PARENT}", timeout=WAIT_MS)
        _close_assistant(page)
        assert page.locator(NAME_CELL).all_inner_texts()[0].endswith(PARENT)
        assert page.locator(NAME_CELL).count() == 1, page.locator(NAME_CELL).all_inner_texts()
        assert page.get_by_text("4 matching runs").count() == 1

        # The vocabulary's metric columns, picked from the Columns menu as a user does.
        page.get_by_role("button", name="Columns").click()
        for key in ("test/cider_d", "test/cider_d_mean", "test/cider_d_std"):
            page.get_by_text(key, exact=True).first.click()
        page.keyboard.press("Escape")
        headers = page.locator(".ag-header-cell").all_inner_texts()
        assert {"test/cider_d", "test/cider_d_mean", "test/cider_d_std"} <= set(headers), headers
        mean_cell = page.locator('.ag-row [col-id="metrics.`test/cider_d_mean`"]').first
        assert float(mean_cell.inner_text()) == pytest.approx(parent.data.metrics["test/cider_d_mean"], rel=1e-6)

        # Expanding the parent shows its three seeds, indented under it, each with its score.
        page.locator(NAME_CELL).first.locator("button").click()
        page.wait_for_selector(f"{NAME_CELL} >> text={PARENT}/seed2", timeout=20_000)
        names = [t.splitlines()[-1] for t in page.locator(NAME_CELL).all_inner_texts()]
        assert names[0] == PARENT and sorted(names[1:]) == [f"{PARENT}/seed{s}" for s in SEEDS], names
        links = page.locator(f"{NAME_CELL} a")
        parent_x = links.nth(0).bounding_box()["x"]
        assert all(links.nth(i).bounding_box()["x"] > parent_x for i in (1, 2, 3)), "seeds not indented"
        scores = page.locator('.ag-row [col-id="metrics.`test/cider_d`"]').all_inner_texts()
        by_name = dict(zip(names, scores, strict=True))
        for run in seeds:
            assert float(by_name[run.info.run_name]) == pytest.approx(run.data.metrics["test/cider_d"], rel=1e-6)
        datasets = page.locator('.ag-row [col-id="attributes.`Dataset`"]').all_inner_texts()
        assert all("dump.npz" in d for d in datasets[1:]), datasets  # what each seed saw
        page.screenshot(path=str(shots / "mlflow_runs.png"))

        # The comparison view of the three seeds.
        ids, exps = json.dumps([r.info.run_id for r in seeds]), json.dumps([exp_id])
        page.goto(f"{base}/#/compare-runs?runs={ids}&experiments={exps}&{ML}")
        page.wait_for_selector("text=Comparing 3 Runs from 1 Experiment", timeout=WAIT_MS)
        _close_assistant(page)
        for run in seeds:
            assert page.get_by_text(run.info.run_name, exact=True).count() == 1, run.info.run_name
        assert page.get_by_role("link", name="test/cider_d", exact=True).count() == 1
        text = page.inner_text("body")
        for run in seeds:
            assert _shown(run.data.metrics["test/cider_d"]) in text
        page.get_by_role("switch").first.click()  # Parameters: show only what differs
        page.get_by_text("Run details", exact=True).evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / "mlflow_compare_seeds.png"))
    assert all((shots / f).stat().st_size > 10_000 for f in ("mlflow_runs.png", "mlflow_compare_seeds.png"))
