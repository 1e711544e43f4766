"""``dvc plots show`` of this project, opened in a real headless Chromium with every network
request refused: each plot of dvc.yaml renders from the offline page template that
``make vega-assets`` writes (clapcap.reporting.vega_page), where DVC's default page is blank
offline (it loads Vega from a CDN).

Needs ``.assets/vega`` (``make test-services`` runs ``make vega-assets`` first); fails, does
not skip, without it. With ``CLAPCAP_UPDATE_SCREENSHOTS=1`` the first screen replaces
``docs/images/dvc_plots.png``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import chromium

from clapcap.reporting.vega_page import TEMPLATE_NAME

pytestmark = pytest.mark.services

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / ".assets" / "vega" / TEMPLATE_NAME


def _show(out: Path, template: Path) -> Path:
    cmd = [sys.executable, "-m", "dvc", "plots", "show", "-o", str(out), "--html-template", str(template)]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, text=True, timeout=300)
    return out / "index.html"


def _render(page_path: Path, shot: Path) -> dict:
    refused: list[str] = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})

        def route(r):
            if r.request.url.startswith("file:"):
                return r.continue_()
            refused.append(r.request.url)
            return r.abort()

        page.route("**/*", route)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        n_plots = page_path.read_text().count("vegaEmbed(")  # one call per plot (vega-embed then replaces it)
        page.wait_for_timeout(3000)
        drawn = page.evaluate("document.querySelectorAll('.vega-embed canvas, .vega-embed svg.marks').length")
        page.screenshot(path=str(shot))
    return {"plots": n_plots, "drawn": drawn, "refused": refused, "errors": errors}


def test_every_plot_renders_offline_from_the_local_template(tmp_path):
    assert TEMPLATE.is_file(), f"{TEMPLATE} not found: run `make vega-assets` (the services tests need it)"
    offline = _render(_show(tmp_path / "offline", TEMPLATE), tmp_path / "offline.png")
    assert offline["plots"] >= 5, offline  # the project defines many plots; all of them went in
    assert offline["drawn"] == offline["plots"], offline
    assert not offline["errors"] and not offline["refused"], offline
    # The control: DVC's own page (dvc-render's template, named explicitly: `make vega-assets`
    # makes the offline one the local default) draws nothing once the CDN is out of reach.
    from dvc_render.html import PAGE_HTML

    own = tmp_path / "dvc_default.html"
    own.write_text(PAGE_HTML)
    default = _render(_show(tmp_path / "default", own), tmp_path / "default.png")
    assert default["drawn"] == 0 and any(re.search(r"cdn\.jsdelivr", u) for u in default["refused"]), default
    if os.environ.get("CLAPCAP_UPDATE_SCREENSHOTS") == "1":
        shutil.copy(tmp_path / "offline.png", REPO / "docs" / "images" / "dvc_plots.png")
