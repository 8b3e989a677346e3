"""max-autotune CPP bmm with a relu epilogue, then an in-place mutation of the bmm's input: AssertionError
in ir.py while compiling. Without the relu, without the mutation, or with ATEN alone it compiles and matches eager.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present, prints a
last line once fixed. Fails on torch 2.13.0+cpu and 2.11 (CPU).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


def program(x, w):
    y = torch.relu(torch.bmm(x, w))
    x.mul_(2)
    return y, x


with torch._inductor.config.patch(max_autotune_gemm_backends="CPP"):
    torch.compile(program, mode="max-autotune")(torch.randn(2, 4, 3), torch.randn(2, 3, 5))
print("no failure: the bug does not reproduce on this torch")
