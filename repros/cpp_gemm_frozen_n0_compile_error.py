"""Inductor CPP GEMM template emits C++ that does not compile for a frozen weight with N == 0.

Found by this suite on torch 2.13.0+cpu (crash oracle; minimized from a campaign finding). With
freezing and the CPP GEMM backend alone, an mm whose weight has 0 columns, its result consumed by
a transpose + contiguous, fails to build: the kernel declares `constexpr int64_t Nt_blocks = 0;`
and then `num_Nt_blocks = (Nr_blocks + Nt_blocks - 1) / Nt_blocks` ("division by zero is not a
constant expression"). With ATEN in the backend set the broken choice is dropped while benchmarking
(an error is logged) and ATen wins. Eager returns an empty (0, 4) tensor.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build) and a C++ compiler.
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 0), requires_grad=False)  # N = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.weight).t().contiguous()


model, x = Linear(), torch.randn(3, 4)
try:
    with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP",
                                                freezing=True, fx_graph_cache=False):
        got = torch.compile(model)(x)
    ok = torch.equal(got, model(x))
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: the generated C++ does not compile
    errors = [ln[ln.find("error:"):] for ln in str(e).splitlines() if "error:" in ln]
    ok, verdict = False, f"BUG: {type(e).__name__}: {(errors or [str(e).splitlines()[0]])[0][-120:]}"
print(f"{verdict} (frozen CPP GEMM with N=0, torch {torch.__version__})")
sys.exit(0 if ok else 1)
