"""DVC: a pipeline is a no-op on the second repro, and an S3-compatible remote round-trips."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _run(cmd, cwd, env=None):
    res = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, f"{cmd} failed:\n{res.stdout}\n{res.stderr}"
    return res.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def repo(tmp_path):
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PATH": f"{BIN}:{os.environ['PATH']}"}
    root = tmp_path / "repo"
    root.mkdir()
    _run(["git", "init", "-q"], root, env)
    _run([str(BIN / "dvc"), "init", "-q"], root, env)
    return root, env


@pytest.fixture
def moto_server():
    port = _free_port()
    proc = subprocess.Popen([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        raise RuntimeError("moto_server did not start")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)


def test_second_repro_does_nothing(repo):
    root, env = repo
    (root / "dvc.yaml").write_text(
        "stages:\n  make:\n    cmd: python -c \"open('out.txt','w').write('x')\"\n    outs:\n      - out.txt\n")
    _run([str(BIN / "dvc"), "repro"], root, env)
    second = _run([str(BIN / "dvc"), "repro"], root, env)
    assert "didn't change, skipping" in second and "Running stage" not in second


def test_s3_remote_push_then_pull_into_fresh_clone(repo, moto_server, tmp_path):
    import boto3

    root, env = repo
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    boto3.client("s3", endpoint_url=moto_server, aws_access_key_id="testing",
                 aws_secret_access_key="testing", region_name="us-east-1").create_bucket(Bucket="clapcap")
    data = root / "data"
    data.mkdir()
    payload = {f"clip{i}.bin": os.urandom(2048 + i) for i in range(3)}
    for name, blob in payload.items():
        (data / name).write_bytes(blob)
    dvc = str(BIN / "dvc")
    _run([dvc, "remote", "add", "-d", "s3remote", "s3://clapcap/store"], root, env)
    _run([dvc, "remote", "modify", "s3remote", "endpointurl", moto_server], root, env)
    _run([dvc, "add", "data"], root, env)
    _run(["git", "add", "-A"], root, env)
    _run(["git", "commit", "-qm", "data"], root, env)
    _run([dvc, "push"], root, env)
    clone = tmp_path / "clone"
    _run(["git", "clone", "-q", str(root), str(clone)], tmp_path, env)
    assert not (clone / "data").exists()
    _run([dvc, "pull"], clone, env)
    for name, blob in payload.items():
        assert (clone / "data" / name).read_bytes() == blob
    shutil.rmtree(clone)
