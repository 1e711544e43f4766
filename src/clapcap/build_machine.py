"""What a build ran on (:func:`machine_record`), written beside its stage times by
``make repro`` (:mod:`clapcap.repro`), so that build times of two machines can be compared."""

from __future__ import annotations

import os
import time
from pathlib import Path

# The vector extensions that decide how fast torch's CPU kernels are: a bfloat16 model is
# fast with avx512_bf16 or amx_bf16 and many times slower without (docs/captioning.md).
_ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def cpu_description(cpuinfo: str | None = None) -> dict[str, object]:
    """The CPU's model name and which of :data:`_ISA_FLAGS` it has, from ``/proc/cpuinfo``
    (or the text given); empty values where that file is absent (not Linux)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return {"model": fields.get("model name", ""), "isa": [f for f in _ISA_FLAGS if f in flags]}


def gemm_gflops(seconds: float = 1.0, n: int = 512) -> float:
    """One-thread float32 matrix-multiply throughput (GFLOP/s) of this machine: an ``n`` x
    ``n`` product repeated for about ``seconds``. A build's stage times scale with it."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(n, n), torch.randn(n, n)
        a @ b  # warm-up
        count, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            a @ b
            count += 1
    finally:
        torch.set_num_threads(threads)
    return round(2 * n**3 * count / elapsed / 1e9, 1)


def machine_record(probe_seconds: float = 1.0) -> dict[str, object]:
    """What a build ran on, so that build times of two machines can be compared: the CPU
    (:func:`cpu_description`), its cores, and :func:`gemm_gflops` measured now."""
    return {**cpu_description(), "cores": os.cpu_count(), "gemm_fp32_gflops_1thread": gemm_gflops(probe_seconds)}
