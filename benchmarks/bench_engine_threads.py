"""How many threads the LLM engine should use inside `make repro`: llama.cpp's server at 1 and
2 threads, alone and beside a busy one-thread stage, against 2 threads (the earlier default)
as the named peer.

`make repro` runs two stages at once on 2 cores, each stage at one intra-op thread
(clapcap.repro.STAGE_ENV). An LLM stage's server at 2 threads then shares a core with the other
stage: llama.cpp's threads wait for each other at every layer, so one delayed thread delays both.
The busy neighbour here is a one-thread torch matmul loop in a child process (a stand-in for a
fine-tune). Same six paraphrase prompts as bench_llm_engine.py (up to 64 tokens, seed 0).

    python benchmarks/bench_engine_threads.py --server-python .engine/bin/python

One run: a measurement, not a test. Prints seconds per configuration and the speed ratio
(characters of answer per second; the answers differ a little between thread counts) against
2 threads in the same setting.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_llm_engine import bench_server  # noqa: E402

BUSY = ("import torch, time\ntorch.set_num_threads(1)\na = torch.randn(512, 512)\n"
        "while True:\n    a = torch.tanh(a @ a)\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", default=".engine/bin/python")
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    speed: dict[tuple[str, int], float] = {}  # characters of answer per second
    for setting in ("alone", "beside a busy stage"):
        busy = subprocess.Popen([sys.executable, "-c", BUSY]) if setting != "alone" else None
        try:
            for threads in (2, 1):
                s, answers, _ = bench_server(args.server_python, args.max_tokens, threads)
                chars = sum(len(a) for a in answers)
                speed[setting, threads] = chars / s
                print(f"{setting:>20}, {threads} thread(s): {s:6.1f} s for 6 prompts ({chars / s:5.1f} chars/s)",
                      flush=True)
        finally:
            if busy is not None:
                busy.terminate()
                busy.wait(timeout=30)
    for setting in ("alone", "beside a busy stage"):
        ratio = speed[setting, 1] / speed[setting, 2]
        print(f"{setting}: 1 thread is {ratio:.2f}x the speed of 2 threads (the peer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
