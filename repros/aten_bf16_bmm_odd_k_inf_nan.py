"""ATen's CPU bf16 bmm returns NaN where the exact product is +-inf: a batch of 2 or more, an inf in A's
last column and an odd K (K = 7 here). Found by this suite's README campaign on torch 2.13.0+cpu on an
Intel Xeon with AVX-512 (a baddbmm with alpha=0.5, beta=0; compiled code inherits it through the extern
kernel, eager fails the same way). K = 6 or 8, float16, float32 and a batch of 1 are right. Does not
reproduce on an AMD EPYC Zen 3 (AVX2) as far as this suite has seen.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (x86 CPU build).
"""
import sys

import torch

torch.manual_seed(0)
a, b = torch.randn(2, 13, 7).bfloat16(), torch.randn(2, 7, 31).bfloat16()
a[0, 0, 6] = float("-inf")  # row 0 of batch 0 of the exact product is +-inf
got, want = torch.bmm(a, b).double(), a.double() @ b.double()
bad = int((got.isnan() & ~want.isnan()).sum())
verdict = f"BUG: {bad} NaN where the exact product is +-inf" if bad else "FIXED"
print(f"{verdict} (bf16 bmm (2, 13, 7) x (2, 7, 31), torch {torch.__version__}, "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()})")
sys.exit(1 if bad else 0)
