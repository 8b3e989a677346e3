"""Inductor max-autotune crashes lowering a bmm with CPP GEMM choices when M, N or K is 0.

Found by this suite on torch 2.13.0+cpu (crash oracle, 10-minute CPU campaign). With the CPP
backend in the set (ATEN,CPP here), bmm (and matmul on 3-D operands) with an empty M or N fails
with `AssertionError: View(...)` from the CPP template kernel, and with K == 0 (or some strides
of an empty N) with `ZeroDivisionError` in `ir.resolve_negative_size`. An empty batch, baddbmm and
2-D mm compile. Eager returns empty / zero results.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config

SHAPES = {"M=0": ((2, 0, 4), (2, 4, 3)), "N=0": ((2, 3, 4), (2, 4, 0)), "K=0": ((2, 3, 0), (2, 0, 3))}
broken = []
for name, (a_shape, b_shape) in SHAPES.items():
    a, b = torch.randn(a_shape), torch.randn(b_shape)
    torch._dynamo.reset()
    try:
        with inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN,CPP", fx_graph_cache=False):
            got = torch.compile(torch.bmm)(a, b)
        if not torch.equal(got, torch.bmm(a, b)):
            broken.append(f"{name}: wrong result")
    except Exception as e:  # the bug: lowering raises
        inner = [ln.strip() for ln in str(e).splitlines() if "Error" in ln]
        broken.append(f"{name}: {(inner or [type(e).__name__])[0][:60]}")
verdict = "FIXED" if not broken else "BUG: " + "; ".join(broken)
print(f"{verdict} (CPU bmm with an empty dim, ATEN,CPP, torch {torch.__version__})")
sys.exit(0 if not broken else 1)
