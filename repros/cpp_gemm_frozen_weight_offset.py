"""Inductor CPP GEMM template ignores the storage offset of a frozen weight.

Found by this suite on torch 2.13.0+cpu (numerics oracle, exact-integer values).
With freezing and the CPP GEMM backend, a constant weight that is a view with a non-zero
storage offset is read from the start of its storage: the compiled result is computed with
the wrong weight. ATen-only backends give the right answer.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(torch.zeros(1), x, self.weight)


storage = torch.arange(18, dtype=torch.float32)
weight = torch.as_strided(storage, (1, 17), (17, 1), 1)  # storage offset 1: values 1..17
x = torch.tensor([[2.0]])
model = Linear(weight)
with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP",
                                            freezing=True, fx_graph_cache=False):
    expected = model(x)
    got = torch.compile(model)(x)
ok = torch.equal(got, expected)
print(f"{'FIXED' if ok else 'BUG'}: cpp gemm with frozen offset weight: expected {expected[0, :4].tolist()}..., "
      f"got {got[0, :4].tolist()}... (torch {torch.__version__})")
sys.exit(0 if ok else 1)
