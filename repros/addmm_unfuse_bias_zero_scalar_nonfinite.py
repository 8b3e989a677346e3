"""On CUDA, inductor rewrites an addmm whose result feeds a pointwise op (post_grad.py:
unfuse_bias_add_to_pointwise) into `beta * input + alpha * (a @ b)` even when beta or alpha is 0, so
the ignored term's NaN/inf turns into NaN: `relu(addmm(input, a, b, beta=0))` with NaN in input, or
`alpha=0` with inf in a @ b. Any compile mode, any GEMM backend (ATen alone too); eager ignores the
term (documented for beta = 0).

Found by this suite (torch 2.11.0+cu130 on an H100). Exit status: 1 while the bug is present, 0
once fixed. Needs only torch with CUDA.
"""

import sys

import torch

g = torch.Generator().manual_seed(0)
a, b = torch.randn(8, 32, generator=g).cuda(), torch.randn(32, 16, generator=g).cuda()
bias = torch.randn(8, 16, generator=g).cuda()
bias_nan, a_inf = bias.clone(), a.clone()
bias_nan[0, 0], a_inf[0, 0] = float("nan"), float("inf")
cases = {
    "beta=0, NaN in input": (lambda i, x, y: torch.relu(torch.addmm(i, x, y, beta=0.0)), (bias_nan, a, b)),
    "alpha=0, inf in a": (lambda i, x, y: torch.relu(torch.addmm(i, x, y, alpha=0.0)), (bias, a_inf, b)),
}
wrong = []
for name, (f, args) in cases.items():
    torch._dynamo.reset()
    extra = int((~torch.compile(f)(*args).isfinite() & f(*args).isfinite()).sum())
    print(f"{name}: {extra} element(s) NaN/inf where eager's are finite")
    wrong += [name] if extra else []
print(f"{'BUG' if wrong else 'FIXED'}: {', '.join(wrong) or 'none'} (torch {torch.__version__}, "
      f"{torch.cuda.get_device_name()})")
sys.exit(1 if wrong else 0)
