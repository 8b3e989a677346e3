"""ATen's CPU bf16 bmm and mm put NaN into output rows whose inputs are all finite, when other rows of A
hold NaN/inf (M = 146, K = 208 here). Found by this suite's property test (a bf16 matmul with nonfinite
values) on torch 2.13.0+cpu on an Intel Xeon with AMX (amx_bf16): eager and the compiled extern kernel
alike; float32 is right; smaller products (32 x 64) are right. The odd-K bf16 bug of AVX-512 Xeons does
not reproduce on this host, nor does this one elsewhere as far as this suite has seen.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (x86 CPU build).
"""
import sys

import torch

torch.manual_seed(0)
a, b = torch.randn(2, 146, 208).bfloat16(), torch.randn(2, 208, 2).bfloat16()
a[:, ::7, 5] = float("nan")  # rows 0, 7, 14, ... hold a NaN
a[:, 3::11, 9] = float("inf")  # rows 3, 14, 25, ... an inf
finite_rows = a.isfinite().all(-1)
got = torch.bmm(a, b)
bad = int((got.isnan().any(-1) & finite_rows).sum())
verdict = f"BUG: NaN in {bad} rows whose inputs are finite" if bad else "FIXED"
print(f"{verdict} (bf16 bmm (2, 146, 208) x (2, 208, 2), torch {torch.__version__}, "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()})")
sys.exit(1 if bad else 0)
