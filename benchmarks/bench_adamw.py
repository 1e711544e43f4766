"""One AdamW step over the SmolLM2 ClipCap prefix projection's parameters (about 12 M, fp32):
``clapcap.compute.adamw`` (torch's fused kernel) against torch's default AdamW (one tensor at a
time), one run, 1 thread. The projection's shapes are built from the params.yaml row.

  python benchmarks/bench_adamw.py [--steps 20]

Prints both times per step, their ratio, and the largest difference between the two updated
parameter sets after the same steps.
"""

from __future__ import annotations

import argparse
import time

import torch


def _params(seed: int) -> list[torch.nn.Parameter]:
    # The SmolLM2 row's projection: 512-d CLAP embedding -> MLP (depth 2) -> 8 x 576 prefix.
    from clapcap.captioning.projection import PrefixProjection

    torch.manual_seed(seed)
    return list(PrefixProjection(512, 576, 8, depth=2).parameters())


def _run(make_opt, steps: int) -> tuple[float, list[torch.Tensor]]:
    params = _params(0)
    opt = make_opt(params)
    grads = [torch.randn_like(p, generator=torch.Generator().manual_seed(i)) for i, p in enumerate(params)]
    for p, g in zip(params, grads, strict=True):
        p.grad = g
    opt.step()  # warm-up: state allocated
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.step()
    return (time.perf_counter() - t0) / steps, [p.detach().clone() for p in params]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from clapcap.compute import adamw

    n = sum(p.numel() for p in _params(0))
    t_torch, a = _run(lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.01), args.steps)
    t_fused, b = _run(lambda ps: adamw(ps, lr=1e-2, weight_decay=0.01), args.steps)
    diff = max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))
    print(f"{n / 1e6:.1f} M parameters, {args.steps} steps, 1 thread")
    print(f"torch AdamW (default, per tensor): {t_torch * 1e3:.1f} ms/step")
    print(f"clapcap.compute.adamw (fused):     {t_fused * 1e3:.1f} ms/step")
    print(f"speed-up {t_torch / t_fused:.2f}x; max |difference| after {args.steps + 1} steps {diff:.2e}")


if __name__ == "__main__":
    main()
