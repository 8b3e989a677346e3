"""max-autotune bmm with CPP template choices and M, N or K == 0 crashes in lowering
(M or N == 0: AssertionError: View(...); K == 0: ZeroDivisionError). Eager returns an empty / zero result.

Not filed upstream yet; same root cause as cpp_gemm_frozen_k0_crash and cpp_gemm_frozen_n0_compile_error
(the CPP templates are offered for empty problems). Plain-torch repro by mm-autotune-fuzz: raises while the
bug is present, prints a last line once fixed. Fails on torch 2.13.0+cpu and 2.11 (CPU).
Usage: python cpp_bmm_empty_dim_crash_plain.py [M=0|N=0|K=0]
"""
import sys

import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
(m, n, k) = {"M=0": (0, 3, 4), "N=0": (3, 0, 4), "K=0": (3, 3, 0)}[sys.argv[1] if sys.argv[1:] else "M=0"]
a, b = torch.randn(2, m, k), torch.randn(2, k, n)
with torch._inductor.config.patch(max_autotune_gemm_backends="ATEN,CPP"):
    torch.compile(torch.bmm, mode="max-autotune")(a, b)
print("no failure: the bug does not reproduce on this torch")
