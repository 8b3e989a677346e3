"""Inductor's freezing_discard_parameters fails on a module with an integer Parameter.

Found by this suite on torch 2.13.0+cpu (crash oracle): invalidate_eager_modules calls
requires_grad_(True) on the erased copy of an int8 Parameter. Exit status: 1 while the bug is
present, 0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Int8Matmul(torch.nn.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch._int_mm(x, self.weight)


weight = torch.randint(-8, 9, (32, 16), dtype=torch.int8)
x = torch.randint(-8, 9, (32, 32), dtype=torch.int8)
try:
    with torch.no_grad(), inductor_config.patch(freezing=True, freezing_discard_parameters=True,
                                                fx_graph_cache=False):
        got = torch.compile(Int8Matmul(weight))(x)
except RuntimeError as e:
    print(f"torch {torch.__version__}: BUG: RuntimeError: {str(e).splitlines()[0][:200]}")
    sys.exit(1)
ok = torch.equal(got, x.int() @ weight.int())
print(f"torch {torch.__version__}: {'compiles, right values' if ok else 'BUG: wrong values'}")
sys.exit(0 if ok else 1)
