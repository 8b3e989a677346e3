"""Inductor max-autotune crashes on the CPU when a bmm with CPP GEMM choices is recompiled with
dynamic shapes (the second call has other strides).

Found by this suite on torch 2.13.0+cpu without triton (crash oracle). Seen as
`ModuleNotFoundError: No module named 'triton'` from select_algorithm.benchmark_choices (suite
harness) and, in this minimal form, as `TypeError: as_strided(): argument 'stride' must be tuple of
ints` (symbolic strides reach benchmarking). Static shapes and ATEN alone compile fine.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (a CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config

a, b = torch.randn(2, 2, 2), torch.randn(2, 2, 2)
b_t = torch.randn(2, 2, 2).transpose(1, 2)  # same shape, other strides: triggers a dynamic recompile
try:
    with inductor_config.patch(max_autotune_gemm=True, max_autotune_gemm_backends="ATEN,CPP", fx_graph_cache=False):
        bmm = torch.compile(torch.bmm)
        bmm(a, b)
        got = bmm(a, b_t)
    ok = torch.allclose(got, torch.bmm(a, b_t))
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: benchmarking imports triton
    ok, verdict = False, f"BUG: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
print(f"{verdict} (CPU bmm with dynamic M under max-autotune, torch {torch.__version__})")
sys.exit(0 if ok else 1)
