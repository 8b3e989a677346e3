"""A view of a batched matmul with N == 1 and a batch-inner operand comes back from torch.compile with
other strides than eager (values equal). NOT A BUG as it stands: inductor promises only the stride
*order* of view outputs (torch/_inductor/graph.py: views get `require_stride_order`); file it only with
a user-visible effect.

Plain-torch repro by mm-autotune-fuzz: the assertion fails while the behaviour is present, prints a last
line once it is gone. Seen on torch 2.13.0+cpu and 2.11, with or without max-autotune.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


def first_row(a, b):
    return torch.matmul(a, b)[..., 0, :]


a = torch.randn(8 * 63 * 16 + 200).as_strided((8, 63, 16), (16, 128, 1))  # batch-inner storage
b = torch.randn(1, 16, 1)
eager, compiled = first_row(a, b), torch.compile(first_row)(a, b)
torch.testing.assert_close(compiled, eager)
assert compiled.stride() == eager.stride(), f"compiled strides {compiled.stride()}, eager {eager.stride()}"
print("no failure: compiled and eager strides agree on this torch")
