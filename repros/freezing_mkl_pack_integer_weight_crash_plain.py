"""Freezing a module whose weight is an integer tensor (`x @ w` on int32 here; any integer dtype)
fails to compile: freezing's linear packing (fx_passes/mkldnn_fusion.py `_is_packable_linear`
refuses float64 only) packs the weight with torch.ops.mkl._mkl_reorder_linear_weight, which raises
"reorder_linear_weight: weight's dtype should be float". Without freezing it compiles and runs.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present,
prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class IntegerLinear(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x):
        return x @ self.weight


module = IntegerLinear(torch.randint(0, 3, (7, 3), dtype=torch.int32)).eval()
x = torch.randint(0, 3, (5, 7), dtype=torch.int32)
with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    got = torch.compile(module)(x)
assert torch.equal(got, module(x))
print("no failure: the bug does not reproduce on this torch")
