"""torch.compile (default mode, any GEMM backend) on CUDA of `torch.relu(torch.addmm(bias, a, b,
beta=0.0))` with NaN in bias: post_grad.py's unfuse_bias_add_to_pointwise rewrites the addmm feeding
a pointwise op into `beta * bias + a @ b` (and `alpha * (a @ b)` for alpha != 1), so the ignored
bias's NaN survives where eager (cuBLAS) drops it, as documented for beta = 0. Without the relu
(no pointwise use) the addmm stays fused and passes; alpha = 0 with inf in a fails the same way.

Plain-torch repro by mm-autotune-fuzz (found by reading the pass after the template-epilogue bug,
the same calls checked on an H100, torch 2.11.0+cu130: 1 NaN for beta = 0, 16 for alpha = 0, eager none): an
assertion fails while the bug is present, prints a last line once fixed.
"""
import torch

print("torch", torch.__version__, "| CUDA", torch.version.cuda, "|", torch.cuda.get_device_name())
g = torch.Generator().manual_seed(0)
a, b = torch.randn(8, 32, generator=g).cuda(), torch.randn(32, 16, generator=g).cuda()
bias = torch.randn(8, 16, generator=g).cuda()
bias[0, 0] = float("nan")


def f(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.addmm(bias, a, b, beta=0.0))


got, want = torch.compile(f)(bias, a, b), f(bias, a, b)
bad = int((~got.isfinite() & want.isfinite()).sum())
assert bad == 0, f"{bad} element(s) NaN/inf where eager's are finite"
print("no failure: the bug does not reproduce on this torch")
