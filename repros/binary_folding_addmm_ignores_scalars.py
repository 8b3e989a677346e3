"""Freezing with enable_linear_binary_folding folds `addmm(b, x, W, beta=0.5, alpha=0.3) + W[:1]`
(an add of a constant taken from the frozen weight) as if beta = alpha = 1.

Found by this suite on torch 2.13.0+cpu (numerics oracle). Exit status: 1 while the bug is present,
0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config


class Model(torch.nn.Module):
    def __init__(self, w: torch.Tensor, b: torch.Tensor) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(w, requires_grad=False)
        self.b = torch.nn.Parameter(b, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.b, x, self.w, beta=0.5, alpha=0.3) + self.w[:1]


g = torch.Generator().manual_seed(0)
x = torch.randint(-4, 5, (53, 257), generator=g).float()
model = Model(torch.randint(-4, 5, (257, 64), generator=g).float(), torch.tensor(3.0))
with torch.no_grad():
    want = model(x)
    with torch._inductor.config.patch({"freezing": True, "enable_linear_binary_folding": True}):
        got = torch.compile(model)(x)
ok = torch.allclose(got, want, atol=1e-3)
print(f"torch {torch.__version__}: {'right values' if ok else 'BUG: the folded add ignores beta and alpha'}")
sys.exit(0 if ok else 1)
