"""End to end through laion_clap's real ``CLAP_Module`` (full-size HTSAT-tiny, 2-layer RoBERTa).

Runs in a subprocess because laion_clap must import with HF_HOME pointing at the offline
cache (built on first use under ``$CLAPCAP_CACHE/hf``). About 30-90 s on 2 cores, hence
slow; the fast variant is ``test_convert.py`` (laion's model code, tiny sizes).
"""

import json
import os
import subprocess
import sys

import pytest

from clapcap.encoders.hf_cache import DEFAULT_CACHE, laion_env

SCRIPT = """
import json, sys
from clapcap.encoders.config import IdentityParams
from clapcap.encoders.crosscheck import run_checkpoint_identity
p = IdentityParams(dataset_dir=sys.argv[1], split="train", max_clips=2, out_dir=sys.argv[2], hf_home=sys.argv[3])
r = run_checkpoint_identity(p, progress=False)
print(json.dumps({k: {kk: r[k][kk] for kk in ("verdict", "cross_pipeline_comparable", "similarity")}
                  for k in ("identity", "control")}))
"""


@pytest.mark.slow
def test_laion_module_vs_converted_hf(tiny_corpus, tmp_path):
    hf_home = DEFAULT_CACHE / "hf"
    env = {**os.environ, **laion_env(hf_home)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tiny_corpus), str(tmp_path), str(hf_home)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["identity"]["verdict"] == "same checkpoint"
    assert result["identity"]["similarity"]["max_abs_diff"] < 1e-3
    assert result["control"]["verdict"].startswith("different checkpoints")
    report = json.loads((tmp_path / "identity.json").read_text())
    assert report["audio_cosine"]["min"] > 0.999 and report["text_cosine"]["min"] > 0.9999
    assert report["pipelines"] == ["laion_clap", "hf_transformers"]
    assert (tmp_path / "laion_random.pt").is_file() and (tmp_path / "hf_converted" / "config.json").is_file()
    assert json.loads((tmp_path / "identity_checkpoints.json").read_text())["verdict"].startswith("not run")
