"""Inductor returns int64 for an int32 (int16, int8, uint8) bmm with M == 1 or N == 1 on the CPU.

Found by this suite on torch 2.13.0+cpu (numerics oracle, output-meta, integer products): tuned_bmm
(torch/_inductor/kernel/bmm.py) lowers a CPU bmm whose M or N is 1 as `sum(a * b)` (memory bound),
and an integer sum is int64; eager's bmm keeps the operands' dtype. The values are right. The CUDA
branch of the same decomposition checks for float dtypes; the CPU branch does not. Also reached
through einsum ('mk,kn->mn' is a bmm of batch 1) and a matmul with a batched weight.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import sys

import torch

broken = []
for dtype in (torch.int32, torch.int16, torch.int8, torch.uint8):
    for name, (a_shape, b_shape) in {"M=1": ((2, 1, 7), (2, 7, 3)), "N=1": ((2, 5, 7), (2, 7, 1))}.items():
        a, b = torch.randint(0, 3, a_shape, dtype=dtype), torch.randint(0, 3, b_shape, dtype=dtype)
        torch._dynamo.reset()
        got, want = torch.compile(torch.bmm)(a, b), torch.bmm(a, b)
        if got.dtype != want.dtype or not torch.equal(got.to(want.dtype), want):
            broken.append(f"{dtype} {name}: compiled {got.dtype}")
verdict = "FIXED" if not broken else "BUG: " + "; ".join(broken)
print(f"{verdict} (CPU integer bmm with M or N == 1, torch {torch.__version__})")
sys.exit(0 if not broken else 1)
