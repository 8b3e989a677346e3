"""Inductor max-autotune emits C++ that does not compile when a CPP GEMM bmm is recompiled
because its first operand's batch stride changed (automatic dynamic shapes).

Found by this suite on torch 2.13.0+cpu (crash oracle, 10-minute CPU campaign): the second call
passes `x` with a padded batch stride (80 instead of 64); dynamo recompiles with that stride
symbolic and the CPP GEMM kernel indexes `X[... + ks1*ks_b_index]` without declaring `ks1`
("'ks1' was not declared in this scope"). A changed M, batch size or weight stride recompiles
fine; ATEN alone, or ATEN,CPP (the CPP choice is dropped), compiles too.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (a CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config

w = torch.randn(2, 16, 8)
x_contiguous = torch.randn(2, 4, 16)
x_padded = torch.randn(2, 80)[:, :64].view(2, 4, 16)  # strides (80, 16, 1)
try:
    with inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP", fx_graph_cache=False):
        bmm = torch.compile(torch.bmm)
        ok = all(torch.allclose(bmm(x, w), torch.bmm(x, w), atol=1e-4) for x in (x_contiguous, x_padded))
    verdict = "FIXED" if ok else "WRONG RESULT"
except Exception as e:  # the bug: CppCompileError from the recompile
    ok, verdict = False, f"BUG: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
print(f"{verdict} (CPP bmm recompiled for a changed batch stride of x, torch {torch.__version__})")
sys.exit(0 if ok else 1)
