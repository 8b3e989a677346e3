"""Inductor's Triton mm template computes a wrong addmm for fp16 with M == 1, K == 177 when the
config has BLOCK_K=128 (BLOCK_M=BLOCK_N=16, num_warps=1); other configs of the same template
(BLOCK_K=16, 32) are right. Under max-autotune it shows whenever that config wins the benchmark.

Found by this suite on an H200 with torch 2.11.0+cu130 / triton 3.6.0 (numerics oracle, per-choice
compiles; also with exact small-integer inputs, so it is not rounding). The config is pinned here
with inductor's `test_configs.autotune_choice_desc_regex`. For an upstream report:
triton_addmm_alpha_beta_m1_plain.py (torch.compile, mode="max-autotune") and
triton_addmm_alpha_beta_m1_kernel.py (the generated kernel as a standalone Triton script).
Usage: python triton_addmm_alpha_beta_m1.py [M K N LD ALPHA BETA DTYPE CONFIG_REGEX]
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch with CUDA.
"""

import sys

import torch
import torch._inductor.config as inductor_config

M, K, N, LD = (int(v) for v in (sys.argv[1:5] or (1, 177, 15, 16)))
ALPHA, BETA = (float(v) for v in (sys.argv[5:7] or (2.0, 2.0)))
DTYPE = getattr(torch, sys.argv[7] if len(sys.argv) > 7 else "float16")
PINNED = sys.argv[8] if len(sys.argv) > 8 else "BLOCK_K=128, BLOCK_M=16, BLOCK_N=16"

gen = torch.Generator().manual_seed(0)
a = torch.randint(-2, 3, (M, K), generator=gen).to(DTYPE).cuda()
b = torch.randint(-2, 3, (K, LD), generator=gen).to(DTYPE).cuda()[:, :N]  # leading dimension LD >= N
bias = torch.randint(-2, 3, (N,), generator=gen).to(DTYPE).cuda()


def f(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.addmm(bias, a, b, alpha=ALPHA, beta=BETA)


exact = (BETA * bias.double() + ALPHA * (a.double() @ b.double())).cpu()  # small integers: exact in fp16
with inductor_config.patch({"max_autotune": True, "max_autotune_gemm_backends": "TRITON", "fx_graph_cache": False,
                            "test_configs.autotune_choice_desc_regex": PINNED}):
    got = torch.compile(f)(bias, a, b).double().cpu()
ok = torch.equal(f(bias, a, b).double().cpu(), exact) and torch.equal(got, exact)
wrong = int((got != exact).sum())
print(f"{'FIXED' if ok else 'BUG'}: addmm M={M} K={K} N={N} ld={LD} alpha={ALPHA} beta={BETA} {DTYPE}: "
      f"{wrong}/{got.numel()} wrong (torch {torch.__version__})")
sys.exit(0 if ok else 1)
