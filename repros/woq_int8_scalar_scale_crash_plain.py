"""max-autotune with freezing: a weight-only int8 linear whose scale is one number (a 0-d buffer),
`(x @ w.t().to(x.dtype)) * scale` with bfloat16 activations: inductor's woq pattern checks only the
scale's dtype, and the _weight_int8pack_mm lowering fails on the broadcast scale (InductorError:
AssertionError: <class 'torch._inductor.ir.Constant'>; a (1,) scale: ir.Pointwise, or with the CPP
template an assertion in CppTemplate.generate). float16 activations (no woq rewrite) pass.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present,
prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Int8Linear(torch.nn.Module):
    def __init__(self, weight, scale):
        super().__init__()
        self.register_buffer("weight", weight)  # (out_features, in_features), int8
        self.register_buffer("scale", scale)  # one scale for the whole tensor

    def forward(self, x):
        return (x @ self.weight.t().to(x.dtype)) * self.scale


weight = torch.randint(-8, 9, (16, 32), dtype=torch.int8)
scale = torch.tensor(0.5, dtype=torch.bfloat16)
x = torch.randint(-3, 4, (8, 32)).to(torch.bfloat16)
with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    got = torch.compile(Int8Linear(weight, scale), mode="max-autotune")(x)
want = (x.double() @ weight.double().t()) * 0.5  # small integers: exact in bfloat16
assert torch.equal(got.double(), want)
print("no failure: the bug does not reproduce on this torch")
