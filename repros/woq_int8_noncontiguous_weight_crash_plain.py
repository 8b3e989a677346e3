"""A plain compile with freezing (no max-autotune, whose extern choice copies the weight
contiguous): a weight-only int8 linear `(x @ w.t().to(x.dtype)) * scale` with
bfloat16 activations whose int8 weight (out_features, in_features) is not contiguous (here the
transpose of an (in, out) tensor, as a model that stores its weight the other way round holds it):
inductor's woq pattern rewrites the product to `_weight_int8pack_mm` without making the weight
contiguous, and the compiled program raises `RuntimeError: _weight_int8pack_mm_cpu : expect B to be
contiguous.` Eager runs; a contiguous weight or float16 activations (no woq rewrite) pass.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present,
prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Int8Linear(torch.nn.Module):
    def __init__(self, weight, scale):
        super().__init__()
        self.register_buffer("weight", weight)  # (out_features, in_features), int8
        self.register_buffer("scale", scale)  # per output channel

    def forward(self, x):
        return (x @ self.weight.t().to(x.dtype)) * self.scale


weight = torch.randint(-8, 9, (32, 16), dtype=torch.int8).t()  # (16, 32), not contiguous
scale = torch.full((16,), 0.5, dtype=torch.bfloat16)
x = torch.randint(-3, 4, (8, 32)).to(torch.bfloat16)
with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    got = torch.compile(Int8Linear(weight, scale))(x)
want = (x.double() @ weight.double().t()) * 0.5  # small integers: exact in bfloat16
assert torch.equal(got.double(), want)
print("no failure: the bug does not reproduce on this torch")
