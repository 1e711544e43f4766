"""An offline page for ``dvc plots show``: DVC's HTML template with Vega inlined.

``dvc plots show`` writes ``dvc_plots/index.html``, which loads Vega, Vega-Lite and
vega-embed from a CDN (``dvc_render.vega.VegaRenderer.SCRIPTS``), so without the internet the
page is blank. DVC takes a page template of its own (``plots.html_template``, or
``--html-template``): a template with a ``{plot_divs}`` placeholder and no ``{scripts}``
placeholder gets no CDN tags. :func:`fetch_vega` downloads the three npm packages at the
versions dvc-render asks the CDN for, checks each tarball against its npm ``integrity``
(SHA-512), and :func:`write_template` writes the template with their ``build/*.min.js`` inlined.
``clapcap assets vega`` runs both; ``make assets`` then points the local DVC config at it.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import tarfile
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clapcap.errors import ClapcapError
from clapcap.utils.io import atomic_path

logger = logging.getLogger(__name__)

REGISTRY = "https://registry.npmjs.org"
TEMPLATE_NAME = "dvc_plots_offline.html"


@dataclass(frozen=True)
class NpmPin:
    """One npm package pinned by version and the registry's ``dist.integrity``."""

    name: str
    version: str
    integrity: str  # "sha512-<base64>", as `npm view <name>@<version> dist.integrity` prints it
    member: str  # the script inside the tarball

    @property
    def tarball(self) -> str:
        return f"{self.name}-{self.version}.tgz"


# The versions dvc-render's VegaRenderer.SCRIPTS loads from the CDN (dvc-render 1.0.x).
VEGA_PINS = (
    NpmPin("vega", "5.20.2", "sha512-qmH7aD9GGPpssVdxL1xgcdxTbQzyRUeRR16Os385ymvQhiwCYQNA6+eXUPAZDTVLfk0RXu6Jzj6kUE5jQ80EVw==",
           "package/build/vega.min.js"),
    NpmPin("vega-lite", "5.2.0", "sha512-Yxcg8MvYfxHcG6BbkaKT0oVCIMIcE19UvqIsEwBmyd/7h2nzW7oRnID81T8UrY7hpDrIr6wa2JADOT2dhGNErw==",
           "package/build/vega-lite.min.js"),
    NpmPin("vega-embed", "6.18.2", "sha512-wcDyQPE4J5aiCDc3/suH5RQDvrKkjuLkhzUcbOLwEkNF8/+pp17tS0JghzEvAPNRg+5aG1/N2ydixq8Lk3dOlg==",
           "package/build/vega-embed.min.js"),
)

Fetcher = Callable[[str], bytes]
"""``fetch(url) -> bytes``: how a tarball is obtained (a test passes a local one)."""


def _http_get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (an https registry URL)
        return response.read()


def integrity_of(data: bytes) -> str:
    """npm's ``dist.integrity`` of a tarball: ``sha512-`` and the base64 digest."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch_vega(dest: str | Path, *, registry: str = REGISTRY, fetch: Fetcher = _http_get,
               pins: Sequence[NpmPin] = VEGA_PINS) -> list[Path]:
    """Download each pinned package, check it, and write its script to ``dest/<name>.min.js``.

    A script already there is kept (it was checked when written). Nothing is written for a
    tarball whose integrity is not the pin's.

    Returns:
        The script paths, in ``pins`` order.

    Raises:
        ClapcapError: a download that fails, a tarball whose integrity differs from the pin's,
            or one without the pinned script.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for pin in pins:
        out = dest / f"{pin.name}.min.js"
        paths.append(out)
        if out.is_file():
            continue
        url = f"{registry.rstrip('/')}/{pin.name}/-/{pin.tarball}"
        try:
            data = fetch(url)
        except OSError as err:
            raise ClapcapError(f"{pin.name}@{pin.version}: download from {url} failed: {err}") from err
        found = integrity_of(data)
        if found != pin.integrity:
            raise ClapcapError(f"{pin.name}@{pin.version}: integrity {found} is not the pinned {pin.integrity}; "
                               "nothing written")
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            try:
                member = tar.extractfile(pin.member)
            except KeyError:
                member = None
            if member is None:
                raise ClapcapError(f"{pin.name}@{pin.version}: {pin.member} is not in the tarball")
            script = member.read()
        with atomic_path(out) as tmp:
            Path(tmp).write_bytes(script)
        logger.info("%s@%s: %s (%d bytes)", pin.name, pin.version, out, len(script))
    return paths


PAGE = """<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>DVC plots (offline)</title>
    <!-- Vega, Vega-Lite and vega-embed inlined by `clapcap assets vega` (clapcap.reporting.vega_page) -->
%s
    <style>
        body { font-family: sans-serif; }
        table { border-spacing: 15px; }
    </style>
</head>
<body>
    {plot_divs}
</body>
</html>"""

_PLACEHOLDERS = ("{plot_divs}", "{scripts}", "{refresh_tag}")


def write_template(scripts: Sequence[str | Path], out: str | Path) -> Path:
    """Write DVC's page template with ``scripts`` inlined, in order, and no ``{scripts}`` slot.

    Raises:
        ClapcapError: a script holding ``</script`` or one of the template's placeholders
            (it would end the inline tag early, or be replaced by DVC).
    """
    tags = []
    for path in scripts:
        text = Path(path).read_text(encoding="utf-8")
        bad = [p for p in ("</script", *_PLACEHOLDERS) if p in text]
        if bad:
            raise ClapcapError(f"{path}: holds {bad[0]!r}, so it cannot be inlined in the page template")
        tags.append(f"    <script>/* {Path(path).name} */\n{text}\n    </script>")
    out = Path(out)
    with atomic_path(out) as tmp:
        Path(tmp).write_text(PAGE % "\n".join(tags), encoding="utf-8")
    return out
