"""Inductor's max-autotune addmm/baddbmm on CUDA computes alpha * (a @ b) + beta * input even when alpha
or beta is 0, so the ignored term still turns inf/NaN into NaN: eager (cuBLAS) returns finite values
where a zero alpha meets an inf in a @ b, and ignores NaN in input when beta is 0 (documented).

Found by this suite's GPU campaign on an H200 with torch 2.11.0+cu130 / triton 3.6.0 (numerics oracle,
nonfinite value mode: baddbmm with alpha=0, beta=0). The Triton template's epilogue is
torch/_inductor/kernel/mm_common.py: addmm_epilogue; inductor's addmm decomposition has the same fault
(pytorch#196596). Exit status: 1 while the bug is present, 0 once fixed. Needs only torch with CUDA.
"""

import sys

import torch
import torch._inductor.config as inductor_config

gen = torch.Generator().manual_seed(0)
a = torch.randn(2, 8, 32, generator=gen).cuda()
b = torch.randn(2, 32, 16, generator=gen).cuda()
bias = torch.randn(2, 8, 16, generator=gen).cuda()
a_inf = a.clone()
a_inf[0, 0, 0] = float("inf")  # a @ b has inf/NaN in row 0: alpha=0 must ignore it
bias_nan = bias.clone()
bias_nan[0, 0, 0] = float("nan")  # beta=0 must ignore it

cases = {  # name: (function, arguments)
    "baddbmm alpha=0": (lambda i, x, y: torch.baddbmm(i, x, y, alpha=0.0, beta=1.0), (bias, a_inf, b)),
    "addmm alpha=0": (lambda i, x, y: torch.addmm(i, x, y, alpha=0.0, beta=1.0), (bias[0], a_inf[0], b[0])),
    "baddbmm beta=0": (lambda i, x, y: torch.baddbmm(i, x, y, alpha=1.0, beta=0.0), (bias_nan, a, b)),
    "addmm beta=0": (lambda i, x, y: torch.addmm(i, x, y, alpha=1.0, beta=0.0), (bias_nan[0], a[0], b[0])),
}
wrong = []
with inductor_config.patch({"max_autotune": True, "max_autotune_gemm_backends": "TRITON", "fx_graph_cache": False}):
    for name, (f, args) in cases.items():
        torch._dynamo.reset()
        eager, got = f(*args), torch.compile(f)(*args)
        extra = int((~got.isfinite() & eager.isfinite()).sum())
        print(f"{name}: {extra} element(s) inf/NaN where eager's are finite")
        wrong += [name] if extra else []
print(f"{'BUG' if wrong else 'FIXED'}: {', '.join(wrong) or 'none'} (torch {torch.__version__}, "
      f"{torch.cuda.get_device_name()})")
sys.exit(1 if wrong else 0)
