"""ATen's CPU bf16 bmm and mm put NaN into output rows whose inputs are all finite, when other rows of A
hold NaN/inf: seen on torch 2.13.0+cpu on an Intel Xeon with AMX (amx_bf16); float32 is right, and so
are small products (32 x 64). Plain-torch repro by mm-autotune-fuzz: an assertion fails while the bug is
present; prints a last line once it is fixed.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
torch.manual_seed(0)
for batch, m, k, n in ((2, 32, 64, 2), (2, 146, 208, 2), (1, 146, 208, 2)):
    a, b = torch.randn(batch, m, k).bfloat16(), torch.randn(batch, k, n).bfloat16()
    a[:, ::7, 5] = float("nan")
    a[:, 3::11, 9] = float("inf")
    finite_rows = a.isfinite().all(-1)  # a correct kernel gives these rows finite results
    bad = int((torch.bmm(a, b).isnan().any(-1) & finite_rows).sum())
    print(f"({batch}, {m}, {k}) x ({batch}, {k}, {n}): NaN in {bad} of {int(finite_rows.sum())} finite rows")
    assert bad == 0, "NaN in output rows whose inputs are all finite"
print("no failure: the bug does not reproduce on this host and torch")
