"""Inductor CPP GEMM template crashes on a frozen weight with K == 0.

Found by this suite on torch 2.13.0+cpu (crash oracle). With freezing and the CPP GEMM backend, a
linear layer whose reduction dimension is 0 fails in lowering:
`TypeError: Cannot convert complex to float` from `cpp_gemm_template.get_cache_blocking`
(oneMKL also prints "Parameter 9 was incorrect on entry to cblas_sgemm_pack"). Eager returns zeros.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(0, 32), requires_grad=False)  # K = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.weight)


model, x = Linear(), torch.randn(4, 0)
try:
    with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN,CPP",
                                                freezing=True, fx_graph_cache=False):
        got = torch.compile(model)(x)
    ok = torch.equal(got, model(x))
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: lowering raises
    ok, verdict = False, f"BUG: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
print(f"{verdict} (frozen CPP GEMM with K=0, torch {torch.__version__})")
sys.exit(0 if ok else 1)
