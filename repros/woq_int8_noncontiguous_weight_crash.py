"""Inductor's woq pattern hands a non-contiguous int8 weight to _weight_int8pack_mm: a plain compile
(no max-autotune) with freezing of a weight-only int8 linear with bfloat16 activations raises
`_weight_int8pack_mm_cpu : expect B to be contiguous`; eager runs.

Found by this suite on torch 2.13.0+cpu (crash oracle). Exit status: 1 while the bug is present,
0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Int8Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, scale: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("scale", scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.weight.t().to(x.dtype)) * self.scale


weight = torch.randint(-8, 9, (32, 16), dtype=torch.int8).t()  # (16, 32), not contiguous
model = Int8Linear(weight, torch.full((16,), 0.5, dtype=torch.bfloat16))
x = torch.randint(-3, 4, (8, 32)).to(torch.bfloat16)
try:
    with torch.no_grad(), inductor_config.patch(freezing=True, fx_graph_cache=False):
        got = torch.compile(model)(x)
except Exception as e:  # the crash is the bug
    print(f"torch {torch.__version__}: BUG: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    sys.exit(1)
ok = torch.equal(got.double(), (x.double() @ weight.double().t()) * 0.5)
print(f"torch {torch.__version__}: {'no crash, right values' if ok else 'BUG: wrong values'}")
sys.exit(0 if ok else 1)
