"""With freezing and the FX graph cache on (inductor's defaults), a second model of the same
architecture whose 0-d parameter (a scalar bias) differs loads the first one's graph from the
cache, with the first model's scalar inlined: wrong results.

Found by this suite on torch 2.13.0+cpu (numerics oracle, its warm-cache compile of a frozen case
on another model's weights). Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
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
        return torch.baddbmm(self.b, x, self.w)


torch.manual_seed(0)
models = [Model(torch.randn(3, 16, 8), torch.tensor(float(i))).eval() for i in (1, 5)]
x = torch.randn(3, 4, 16)
with torch.no_grad(), torch._inductor.config.patch({"freezing": True, "fx_graph_cache": True}):
    errors = [(torch.compile(m)(x) - m(x)).abs().max().item() for m in models]
ok = max(errors) < 1e-4
bug = f"BUG: a model computes with another model's scalar (errors {errors})"
print(f"torch {torch.__version__}: {'right values' if ok else bug}")
sys.exit(0 if ok else 1)
