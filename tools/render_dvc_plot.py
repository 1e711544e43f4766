"""Render one of dvc.yaml's top-level plots to a PNG, as `dvc plots show` draws it.

`dvc plots show` writes an HTML page that loads Vega from a CDN, which an offline machine
cannot reach. This asks DVC for the same Vega-Lite specs (`dvc plots show --json`, the data
filled in) and renders the one named with vl-convert (Vega's own renderer, no browser).

    python tools/render_dvc_plot.py "CLAP training loss (default, RobustCLAP, control)" docs/images/dvc_plot.png
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def plot_specs(cwd: str | Path = ".") -> dict[str, dict]:
    """Every top-level plot's filled Vega-Lite spec, by plot id (workspace revision)."""
    out = subprocess.run(["dvc", "plots", "show", "--json"], cwd=cwd, check=True, capture_output=True, text=True)
    data = json.loads(out.stdout)["data"]
    return {name: entries[0]["content"] for name, entries in data.items() if entries and entries[0].get("content")}


def render(spec: dict, out: str | Path, *, scale: float = 2.0) -> Path:
    import vl_convert as vlc

    out = Path(out)
    out.write_bytes(vlc.vegalite_to_png(spec, scale=scale))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("plot", help="the plot's id in dvc.yaml `plots:`")
    ap.add_argument("out", help="PNG path to write")
    ap.add_argument("--cwd", default=".", help="the DVC repository")
    args = ap.parse_args(argv)
    specs = plot_specs(args.cwd)
    if args.plot not in specs:
        print(f"render_dvc_plot: error: no plot {args.plot!r}; dvc.yaml has: {sorted(specs)}", file=sys.stderr)
        return 2
    print(render(specs[args.plot], args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
