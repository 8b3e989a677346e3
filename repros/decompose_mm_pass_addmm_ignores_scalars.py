"""With post_grad_fusion_options={"decompose_mm_pass": {}}, inductor rewrites a CPU addmm with one row
(M == 1) into sum(x * w) + input, dropping alpha and beta: `torch.addmm(b, x, w, beta=0.5, alpha=-1)`
returns x @ w + b.

Found by this suite on torch 2.13.0+cpu (numerics oracle). Exit status: 1 while the bug is present,
0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config


def f(b: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.addmm(b, x, w, beta=0.5, alpha=-1.0)


g = torch.Generator().manual_seed(0)
x, w = torch.randint(-4, 5, (1, 8), generator=g).float(), torch.randint(-4, 5, (8, 190), generator=g).float()
b = torch.randint(-4, 5, (190,), generator=g).float()
with torch._inductor.config.patch({"post_grad_fusion_options": {"decompose_mm_pass": {}}}):
    got = torch.compile(f)(b, x, w)
ok = torch.allclose(got, f(b, x, w), atol=1e-3)
print(f"torch {torch.__version__}: {'right values' if ok else 'BUG: the decomposed addmm ignores beta and alpha'}")
sys.exit(0 if ok else 1)
