"""Inductor's CPP GEMM template fails to generate a frozen fp16/bf16 linear with a residual add
(`x @ W + y`, which the mkldnn fusion pass lowers as linear_binary) when the batch is empty.

Found by this suite on torch 2.13.0+cpu (crash oracle): mm_plus_mm with a frozen second product and
M == 0 drawn on the CPU, then reduced to this program. `CppTemplate.generate` asserts that the
kernel's call arguments start with the expected ones, and the binary operand `y` is missing
(`AssertionError: (['arg1_1', '_frozen_param1', 'buf_out0'], ['arg1_1', '_frozen_param1', 'arg2_1',
'buf_out0'])`). float32 (another fusion path) and M > 0 are fine; eager returns an empty (0, N) tensor.
Usage: python cpp_gemm_linear_binary_m0_crash.py [M [dtype]]   (defaults: 0 float16)
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build) and a C++ compiler.
"""

import sys

import torch
import torch._inductor.config as inductor_config

M = int(sys.argv[1]) if len(sys.argv) > 1 else 0
DTYPE = getattr(torch, sys.argv[2] if len(sys.argv) > 2 else "float16")


class LinearResidual(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(226, 5, dtype=DTYPE), requires_grad=False)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.weight) + y


model, x, y = LinearResidual(), torch.randn(M, 226, dtype=DTYPE), torch.randn(M, 5, dtype=DTYPE)
try:
    with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP,ATEN",
                                                freezing=True, fx_graph_cache=False):
        got = torch.compile(model)(x, y)
    ok = got.shape == (M, 5) and torch.allclose(got.float(), model(x, y).float(), rtol=2e-2, atol=2e-1)
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: an AssertionError while generating the CPP template's kernel
    ok, verdict = False, f"BUG: {str(e).strip().splitlines()[0][:160]}"
print(f"{verdict} (frozen {DTYPE} linear + residual, CPP GEMM, M={M}, torch {torch.__version__})")
sys.exit(0 if ok else 1)
