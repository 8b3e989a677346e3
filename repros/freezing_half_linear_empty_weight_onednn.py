"""Inductor freezing crashes on a bf16/fp16 linear (mm or addmm with a constant weight) whose
weight is empty: reduction dimension K == 0 (shown here) or N == 0.

Found by this suite on torch 2.13.0+cpu (crash oracle; the case compiled with max-autotune, but
freezing alone is enough). Freezing packs the half-precision weight for oneDNN's inner product and
constant-folds it; with K == 0 oneDNN raises "could not create a primitive descriptor for the inner
product forward propagation primitive" (from constant_folding). bmm compiles fine; float32 with N == 0
has its own bug (freezing_mkl_linear_n0_sigfpe.py).
Eager returns zeros. Host condition: freezing packs bf16/fp16 weights only where
torch.ops.mkldnn._is_mkldnn_bf16_supported() (fp16: _fp16_) is True (AVX-512 class x86); elsewhere (e.g. an
AMD EPYC Zen 3, AVX2) nothing is packed and this prints FIXED.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (x86 CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(0, 4, dtype=torch.bfloat16), requires_grad=False)  # K = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.weight)


model, x = Linear(), torch.randn(3, 0, dtype=torch.bfloat16)
try:
    with torch.no_grad(), inductor_config.patch(freezing=True, fx_graph_cache=False):
        got = torch.compile(model)(x)
    ok = torch.equal(got, model(x))
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: freezing's constant folding raises
    errors = [ln for ln in str(e).splitlines() if "Error:" in ln]
    ok, verdict = False, f"BUG: {type(e).__name__}: {(errors or [str(e).splitlines()[0]])[0][:110]}"
print(f"{verdict} (frozen bf16 mm with K=0, torch {torch.__version__}, "
      f"oneDNN bf16: {torch.ops.mkldnn._is_mkldnn_bf16_supported()})")
sys.exit(0 if ok else 1)
