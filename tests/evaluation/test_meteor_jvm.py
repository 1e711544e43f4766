"""The persistent METEOR process gives aac-metrics' own METEOR values, call after call."""

from __future__ import annotations

import pytest

from clapcap.evaluation import meteor_jvm

SETS = [
    (["a dog barks in the distance", "rain falls on a metal roof", "a man speaks while birds chirp"],
     [["a dog is barking far away", "a dog barks in the distance while wind blows"],
      ["heavy rain hits a metal roof", "rain is falling on a tin roof"],
      ["a man talks as birds are chirping", "birds chirp while a man speaks"]]),
    (["water flows in a small stream", "a crowd cheers and claps loudly"],
     [["a stream of water flows gently", "water runs in a brook"],
      ["people cheer and applaud", "a large crowd claps and cheers"]]),
    # A candidate with the field separator and a double space (aac-metrics' own cleaning).
    (["someone ||| plays a  piano melody slowly", "wind wind wind"],
     [["a slow piano melody is played", "someone plays the piano"], ["the wind blows through leaves"]]),
]


@pytest.fixture(scope="module")
def process(aac_env):
    proc = meteor_jvm.MeteorProcess(aac_env)
    yield proc
    proc.close()


def test_every_call_equals_aac_metrics_meteor(process, aac_env):
    from aac_metrics.functional.meteor import meteor as aac_meteor

    # Each set twice, interleaved: a call's scores must not depend on the calls before it.
    for cands, mrefs in SETS + SETS[::-1]:
        corpus, sents = process.score(cands, mrefs)
        want_corpus, want_sents = aac_meteor(cands, mrefs, cache_path=str(aac_env.cache_path),
                                             java_path=aac_env.java_path)
        assert corpus == float(want_corpus["meteor"])
        assert sents == [float(x) for x in want_sents["meteor"]]
    assert process.calls == 2 * len(SETS)
    assert process.alive


def test_shared_process_is_reused_and_restarted(aac_env):
    first = meteor_jvm.shared_process(aac_env)
    assert meteor_jvm.shared_process(aac_env) is first
    first.close()  # a dead process is replaced, and the call still answers
    corpus, _ = meteor_jvm.meteor(*SETS[1], aac_env)
    again = meteor_jvm.shared_process(aac_env)
    assert again is not first and again.alive
    assert corpus == meteor_jvm.meteor(*SETS[1], aac_env)[0]
    meteor_jvm.close_all()


def test_mismatched_inputs_are_refused(process):
    with pytest.raises(ValueError, match="as many candidates"):
        process.score(["a dog"], [])
    with pytest.raises(ValueError, match="as many candidates"):
        process.score([], [])


def test_a_dead_process_says_so(aac_env):
    proc = meteor_jvm.MeteorProcess(aac_env)
    proc._proc.kill()
    proc._proc.wait()
    with pytest.raises(meteor_jvm.MeteorProcessError, match="METEOR process ended"):
        proc.score(*SETS[1])
    proc.close()


def test_a_server_gives_the_same_scores_to_other_processes(aac_env, monkeypatch):
    import json
    import os
    import subprocess
    import sys

    from aac_metrics.functional.meteor import meteor as aac_meteor

    with meteor_jvm.serving(aac_env) as server:
        monkeypatch.setenv(meteor_jvm.SERVER_ENV, server.address)
        for cands, mrefs in SETS:
            want_corpus, want_sents = aac_meteor(cands, mrefs, cache_path=str(aac_env.cache_path),
                                                 java_path=aac_env.java_path)
            assert meteor_jvm.meteor(cands, mrefs, aac_env) == (float(want_corpus["meteor"]),
                                                                 [float(x) for x in want_sents["meteor"]])
        # Another interpreter, as a DVC stage is: it scores on the server, with no JVM of its own.
        code = ("import json, pathlib; from clapcap.evaluation import meteor_jvm as m; "
                "from clapcap.evaluation.aac_assets import AacEnv; "
                f"env = AacEnv(pathlib.Path({str(aac_env.cache_path)!r}), {aac_env.java_path!r}); "
                f"print(json.dumps(m.meteor(*{SETS[0]!r}, env))); print(len(m._PROCESSES))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, meteor_jvm.SERVER_ENV: server.address}).stdout.splitlines()
        corpus, sents = json.loads(out[0])
        assert (corpus, sents) == meteor_jvm.meteor(*SETS[0], aac_env)
        assert out[1] == "0", "the other process started a METEOR JVM of its own"
        assert server.process.calls == len(SETS) + 2


def test_an_unreachable_server_falls_back_to_a_local_process(aac_env, monkeypatch):
    monkeypatch.setenv(meteor_jvm.SERVER_ENV, "127.0.0.1:9")  # discard port: nothing listens
    corpus, sents = meteor_jvm.meteor(*SETS[1], aac_env)
    assert len(sents) == 2 and 0 <= corpus <= 1
    meteor_jvm.close_all()
