"""ATen's CPU bf16 bmm (a batch of 2 or more) returns NaN where the exact product is +-inf, when A has an
inf in its last column and K is odd: K = 7 and 9 fail, 6 and 8 pass; float16 and float32 are right, and a
batch of 1 (the mm path) is right. Seen on torch 2.13.0+cpu on an Intel Xeon with AVX-512 (oneDNN bf16
kernels pair K, so the inf likely meets a zero pad: inf * 0 = NaN). Plain-torch repro by mm-autotune-fuzz:
an assertion fails while the bug is present; prints a last line once it is fixed.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
torch.manual_seed(0)
for K in (6, 7, 8, 9):
    a, b = torch.randn(2, 13, K).bfloat16(), torch.randn(2, K, 31).bfloat16()
    a[0, 0, K - 1] = float("-inf")  # row 0 of batch 0 of the exact product is +-inf, never NaN
    got, want = torch.bmm(a, b).double(), a.double() @ b.double()
    print(f"K={K}: {int(got[0, 0].isnan().sum())} NaN in row 0 (float64: {int(want[0, 0].isnan().sum())})")
    assert not got[0, 0].isnan().any(), f"K={K}: NaN where the exact product is +-inf"
print("no failure: the bug does not reproduce on this host and torch")
