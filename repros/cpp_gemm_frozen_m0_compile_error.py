"""Inductor CPP GEMM template emits C++ that does not compile for a frozen weight and M == 0.

Found by this suite on torch 2.13.0+cpu (crash oracle, the README's 5-minute CPU campaign). With
freezing and the CPP GEMM backend alone, an mm of an input with 0 rows by a frozen (214, 255)
weight fails to build: the kernel declares `constexpr int64_t Mc_blocks = 0;` and divides by it ("division
by zero is not a constant expression"), as with N == 0 (repros/cpp_gemm_frozen_n0_compile_error.py).
With ATEN in the backend set the broken choice is dropped while autotuning and ATen wins. Eager
returns an empty (0, 255) tensor.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build) and a C++ compiler.
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(214, 255), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.weight)


model, x = Linear(), torch.randn(0, 214)  # M = 0
try:
    with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP",
                                                freezing=True, fx_graph_cache=False):
        got = torch.compile(model)(x)
    ok = got.shape == (0, 255)
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: the generated C++ does not compile
    errors = [ln[ln.find("error:"):] for ln in str(e).splitlines() if "error:" in ln]
    ok, verdict = False, f"BUG: {type(e).__name__}: {(errors or [str(e).splitlines()[0]])[0][-120:]}"
print(f"{verdict} (frozen CPP GEMM with M=0, torch {torch.__version__})")
sys.exit(0 if ok else 1)
