"""max-autotune with freezing: a weight-only int8 linear, `(x @ w.t().to(x.dtype)) * scale` with
bfloat16 activations, is rewritten by inductor's woq pattern to aten._weight_int8pack_mm, which dies
with SIGSEGV when K is not a multiple of 16 (the ATen kernel alone does too; K = 32 passes).

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: the process dies while the bug is
present, prints a last line once fixed. Dies on torch 2.13.0+cpu (CPU capability AVX512).
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


K = 40
weight = torch.randint(-8, 9, (16, K), dtype=torch.int8)
scale = torch.full((16,), 0.5, dtype=torch.bfloat16)
x = torch.randint(-3, 4, (24, K)).to(torch.bfloat16)
with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    got = torch.compile(Int8Linear(weight, scale), mode="max-autotune")(x)
print("no failure: the bug does not reproduce on this torch")
