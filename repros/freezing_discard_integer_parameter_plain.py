"""Freezing with freezing_discard_parameters: a module holding an integer weight as a Parameter
(requires_grad=False, as an int8 matmul's weight) fails to compile: invalidate_eager_modules calls
requires_grad_(True) on the erased copy of every Parameter (RuntimeError: only Tensors of floating
point dtype can require gradients). Without the option it compiles and runs.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present,
prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Int8Matmul(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x):
        return torch._int_mm(x, self.weight)


weight = torch.randint(-8, 9, (32, 16), dtype=torch.int8)
x = torch.randint(-8, 9, (32, 32), dtype=torch.int8)
with torch.no_grad(), torch._inductor.config.patch(freezing=True, freezing_discard_parameters=True):
    got = torch.compile(Int8Matmul(weight))(x)
assert torch.equal(got, x.int() @ weight.int())
print("no failure: the bug does not reproduce on this torch")
