"""The offline page of ``dvc plots show`` (clapcap.reporting.vega_page): pinned npm tarballs
checked by integrity, and a template that DVC itself fills without any CDN tag."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile

import pytest

from clapcap.errors import ClapcapError
from clapcap.reporting.vega_page import NpmPin, fetch_vega, integrity_of, write_template


def _tarball(member: str, text: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = text.encode()
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_fetch_checks_integrity_and_writes_only_checked_scripts(tmp_path):
    good = _tarball("package/build/a.min.js", "var a = 1;")
    pin = NpmPin("a", "1.0.0", integrity_of(good), "package/build/a.min.js")
    asked = []

    def fetch(url):
        asked.append(url)
        return good

    [path] = fetch_vega(tmp_path / "v", registry="http://registry.test/", fetch=fetch, pins=[pin])
    assert path.read_text() == "var a = 1;" and asked == ["http://registry.test/a/-/a-1.0.0.tgz"]
    fetch_vega(tmp_path / "v", fetch=fetch, pins=[pin])  # kept: no second download
    assert len(asked) == 1
    tampered = NpmPin("b", "1.0.0", integrity_of(good), "package/build/b.min.js")
    with pytest.raises(ClapcapError, match="b.min.js is not in the tarball"):
        fetch_vega(tmp_path / "w", fetch=fetch, pins=[tampered])
    other = NpmPin("c", "2.0.0", integrity_of(b"something else"), "package/build/a.min.js")
    with pytest.raises(ClapcapError, match="is not the pinned"):
        fetch_vega(tmp_path / "w", fetch=fetch, pins=[other])
    assert not any((tmp_path / "w").glob("*.js"))

    def offline(url):
        raise OSError("Temporary failure in name resolution")

    with pytest.raises(ClapcapError, match="download from .* failed: Temporary failure"):
        fetch_vega(tmp_path / "x", fetch=offline, pins=[pin])


def test_dvc_fills_the_template_without_cdn_tags(tmp_path):
    scripts = []
    for name in ("vega", "vega-lite", "vega-embed"):
        scripts.append(tmp_path / f"{name}.min.js")
        scripts[-1].write_text(f"window['{name}'] = true;")
    template = write_template(scripts, tmp_path / "page.html")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "loss.csv").write_text("epoch,train_loss\n1,2.0\n2,1.5\n")
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run([*dvc, "init", "--no-scm", "-q"], cwd=repo, check=True)
    subprocess.run([*dvc, "plots", "show", "loss.csv", "-x", "epoch", "--html-template", str(template),
                    "-o", "out"], cwd=repo, check=True, capture_output=True)
    page = (repo / "out" / "index.html").read_text()
    assert "cdn.jsdelivr" not in page and "<script src=" not in page
    assert page.index("window['vega'] = true;") < page.index("window['vega-embed'] = true;")
    assert "vegaEmbed" in page and '"train_loss"' in page  # DVC's own plot div went in


def test_a_script_that_would_break_the_page_is_refused(tmp_path):
    bad = tmp_path / "bad.min.js"
    bad.write_text("var s = '</script>';")
    with pytest.raises(ClapcapError, match="cannot be inlined"):
        write_template([bad], tmp_path / "page.html")
    bad.write_text("var s = '{plot_divs}';")
    with pytest.raises(ClapcapError, match="plot_divs"):
        write_template([bad], tmp_path / "page.html")
