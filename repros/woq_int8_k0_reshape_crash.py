"""Inductor's woq lowering reshapes the activation with `[-1, K]`: a weight-only int8 linear with no
input features (K == 0) and bfloat16 activations crashes the lowering (ZeroDivisionError in
resolve_negative_size); eager's _weight_int8pack_mm returns the (M, N) zeros.

Found by this suite on torch 2.13.0+cpu (crash oracle; a 3-minute CPU campaign, seed 3). Exit
status: 1 while the bug is present, 0 once fixed. Needs only torch.
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


model = Int8Linear(torch.zeros(62, 0, dtype=torch.int8), torch.ones(62, dtype=torch.bfloat16))
x = torch.randn(8, 0, dtype=torch.bfloat16)
try:
    with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN",
                                                freezing=True, fx_graph_cache=False):
        got = torch.compile(model)(x)
except Exception as e:  # the crash is the bug
    print(f"torch {torch.__version__}: BUG: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    sys.exit(1)
ok = got.shape == (8, 62) and not bool(got.any())
print(f"torch {torch.__version__}: {'no crash, right values' if ok else 'BUG: wrong values'}")
sys.exit(0 if ok else 1)
