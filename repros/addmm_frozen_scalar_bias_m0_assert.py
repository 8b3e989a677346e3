"""A frozen addmm with a 0-d bias and M == 0 under max-autotune: on torch 2.11 tuned_addmm's
empty-problem path hands the unexpanded constant bias to aten_addmm, and lowering fails
(AssertionError: ir.Constant in unwrap_storage_for_input); torch 2.13 computes it.

Found by this suite on torch 2.11.0 (crash oracle). Exit status: 1 while the bug is present,
0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 16), requires_grad=False)
        self.b = torch.nn.Parameter(torch.tensor(0.5), requires_grad=False)  # a 0-d bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.b, x, self.w)


x = torch.randn(0, 8)
try:
    with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN",
                                                freezing=True, fx_graph_cache=False):
        got = torch.compile(Model().eval())(x)
except Exception as e:  # the crash is the bug
    print(f"torch {torch.__version__}: BUG: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    sys.exit(1)
ok = got.shape == (0, 16)
print(f"torch {torch.__version__}: {'no crash, right shape' if ok else 'BUG: wrong shape'}")
sys.exit(0 if ok else 1)
