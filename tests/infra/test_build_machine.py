"""The machine record of ``reports/build_times.json``: which CPU a build ran on and how fast
it multiplies matrices, so build times of two machines can be compared."""

from __future__ import annotations

from clapcap.build_machine import cpu_description, gemm_gflops, machine_record

CPUINFO = """processor	: 0
vendor_id	: AuthenticAMD
model name	: AMD EPYC
flags		: fpu sse2 avx avx2 fma
processor	: 1
model name	: AMD EPYC
flags		: fpu sse2 avx avx2 fma
"""


def test_cpu_description_names_the_model_and_the_extensions_that_matter():
    assert cpu_description(CPUINFO) == {"model": "AMD EPYC", "isa": ["avx2"]}
    bf16 = CPUINFO.replace("avx2 fma", "avx2 avx512f avx512_bf16 amx_bf16 amx_tile")
    assert cpu_description(bf16)["isa"] == ["avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
    assert cpu_description("") == {"model": "", "isa": []}


def test_gemm_probe_measures_a_positive_rate_and_restores_threads():
    import torch

    before = torch.get_num_threads()
    rate = gemm_gflops(seconds=0.05, n=64)
    assert rate > 0 and torch.get_num_threads() == before
    record = machine_record(probe_seconds=0.05)
    assert record["cores"] >= 1 and record["gemm_fp32_gflops_1thread"] > 0 and "isa" in record
