"""A weight-only int8 linear with no input features (K == 0), `(x @ w.t().to(x.dtype)) * scale`
with bfloat16 activations and freezing: inductor's woq lowering (fx_passes/quantization.py,
_register_woq_lowering) reshapes x to `[-1, K]`, which cannot be resolved for an empty tensor with
K == 0 (InductorError: ZeroDivisionError in ir.py resolve_negative_size). Any compile mode and
backend; eager returns zeros; float16 activations (no woq rewrite) pass.

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


weight = torch.zeros(62, 0, dtype=torch.int8)  # in_features == 0
scale = torch.ones(62, dtype=torch.bfloat16)
x = torch.randn(8, 0, dtype=torch.bfloat16)
with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    got = torch.compile(Int8Linear(weight, scale))(x)
assert got.shape == (8, 62) and not got.any()
print("no failure: the bug does not reproduce on this torch")
