"""Inductor max-autotune addmm with a 0-dim (scalar tensor) bias raises IndexError in lowering.

Found by this suite on torch 2.13.0+cpu (crash oracle). `tuned_addmm` evaluates
`inp.get_stride()[0] == 0` before `len(inp.get_size()) == 2`, so a rank-0 bias has no stride[0].
Eager mode accepts the broadcast. Not seen on torch 2.11 (the check is newer).
Tracked upstream: https://github.com/pytorch/pytorch/issues/197107 (open; fix PR #197214 open).
Plain-torch repro for the issue: addmm_scalar_bias_indexerror_plain.py.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU is enough).
"""

import sys

import torch
import torch._inductor.config as inductor_config


def f(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.addmm(bias, a, b)


bias, a, b = torch.tensor(1.5), torch.randn(4, 8), torch.randn(8, 17)
try:
    with inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN", fx_graph_cache=False):
        got = torch.compile(f)(bias, a, b)
    ok = torch.allclose(got, f(bias, a, b))
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: lowering raises
    ok, verdict = False, f"BUG: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
print(f"{verdict} (addmm with a 0-dim bias under max-autotune, torch {torch.__version__})")
sys.exit(0 if ok else 1)
