"""torch.compile(mode="max-autotune") of `torch.mm(a, b, out_dtype=torch.float32)` with bf16 inputs returns
bf16 instead of float32 when the product has a single row (M == 1): coordinate-descent tuning (which
mode="max-autotune" turns on) suffices. Eager returns float32.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: the assertion fails while the bug is present,
prints a last line once fixed. Failed on torch 2.11.0+cu130 / triton 3.6.0 (H200). Needs torch with CUDA.
"""
import torch

print("torch", torch.__version__, "| CUDA", torch.version.cuda, "|", torch.cuda.get_device_name())


def f(a, b):
    return torch.mm(a, b, out_dtype=torch.float32)


a = torch.randn(1, 2112, device="cuda", dtype=torch.bfloat16)  # M = 1
b = torch.randn(2112, 20, device="cuda", dtype=torch.bfloat16)
got = torch.compile(f, mode="max-autotune", dynamic=True)(a, b)
assert got.dtype == f(a, b).dtype == torch.float32, f"compiled dtype {got.dtype}, eager {f(a, b).dtype}"
print("no failure: the bug does not reproduce on this torch")
