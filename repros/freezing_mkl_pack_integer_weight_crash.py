"""Inductor's freezing fails on a frozen integer linear weight (any backend, max-autotune or not).

Found by this suite on torch 2.13.0+cpu (crash oracle, integer products): freezing's linear packing
pass (fx_passes/mkldnn_fusion.py `_is_packable_linear`) refuses float64 operands but not integer
ones, so a module computing `x @ w` on int64/int32/int16/int8/uint8 tensors with a frozen weight is
packed with `torch.ops.mkl._mkl_reorder_linear_weight`, which raises "reorder_linear_weight:
weight's dtype should be float". Without freezing it compiles and matches eager.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build with MKL).
"""

import sys

import torch
import torch._inductor.config as inductor_config


class IntegerLinear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight


broken = []
for dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
    weight, x = torch.randint(0, 3, (7, 3), dtype=dtype), torch.randint(0, 3, (5, 7), dtype=dtype)
    module = IntegerLinear(weight).eval()
    torch._dynamo.reset()
    try:
        with torch.no_grad(), inductor_config.patch(freezing=True, fx_graph_cache=False):
            got = torch.compile(module)(x)
        if not torch.equal(got, module(x)):
            broken.append(f"{dtype}: wrong values")
    except Exception as e:  # the bug: freezing raises
        inner = [ln.strip() for ln in str(e).splitlines() if "Error" in ln]
        broken.append(f"{dtype}: {(inner or [type(e).__name__])[0][:80]}")
verdict = "FIXED" if not broken else "BUG: " + "; ".join(broken)
print(f"{verdict} (frozen integer x @ w on the CPU, torch {torch.__version__})")
sys.exit(0 if not broken else 1)
