"""Check the LLM engine's build on this CPU: load a GGUF model and evaluate a prompt of several
tokens, in a child process, so that a crash is reported instead of taken as success.

`make engine` runs it with the engine venv's interpreter after compiling llama.cpp. It exists
because a llama.cpp build can import cleanly and still die on the first real prompt: the
default -march=native build segfaulted on a CPU with AMX (2026-12-04; the Makefile's
ENGINE_CMAKE_ARGS now builds for AVX2).

    .engine/bin/python tools/engine_smoke.py path/to/model.gguf
"""

from __future__ import annotations

import signal
import subprocess
import sys

PROBE = """
import sys
from llama_cpp import Llama
m = Llama(model_path=sys.argv[1], n_threads=1, n_ctx=256, verbose=False)
out = m("A dog barks twice, then a car passes by on a wet road.", max_tokens=4, temperature=0.0)
print(repr(out["choices"][0]["text"]))
"""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: engine_smoke.py MODEL.gguf", file=sys.stderr)
        return 2
    proc = subprocess.run([sys.executable, "-c", PROBE, argv[0]], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        why = (f"killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        print(f"engine_smoke: llama.cpp crashed evaluating a 14-token prompt ({why}); rebuild the engine for "
              f"this CPU (Makefile ENGINE_CMAKE_ARGS, then `rm -rf .engine && make engine`)\n{proc.stderr[-1500:]}",
              file=sys.stderr)
        return 1
    print(f"engine_smoke: ok, {argv[0]} continued the prompt with {proc.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
