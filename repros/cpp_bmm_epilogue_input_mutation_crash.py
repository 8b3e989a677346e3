"""Inductor max-autotune crashes when a CPP GEMM bmm has a pointwise epilogue and the program
then mutates the bmm's first input in place.

Found by this suite on torch 2.13.0+cpu (crash oracle, 10-minute CPU campaign): `relu(bmm(x, w))`
followed by `x.mul_(2)`, returning both, fails with an AssertionError from `ir.py` (an indexer)
whenever CPP is in the backend set. Without the relu, or without the mutation, or with ATEN
alone, it compiles and matches eager.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config


def program(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.relu(torch.bmm(x, w))
    x.mul_(2)
    return y, x


x, w = torch.randn(2, 4, 3), torch.randn(2, 3, 5)
expected = program(x.clone(), w)
try:
    with inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP", fx_graph_cache=False):
        got = torch.compile(program)(x.clone(), w)
    ok = all(torch.allclose(g, e) for g, e in zip(got, expected, strict=True))
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: lowering / scheduling raises
    inner = [ln.strip() for ln in str(e).splitlines() if "Error" in ln]
    ok, verdict = False, f"BUG: {type(e).__name__}: {(inner or [''])[0][:100]}"
print(f"{verdict} (CPP bmm + relu epilogue + input mutation, torch {torch.__version__})")
sys.exit(0 if ok else 1)
