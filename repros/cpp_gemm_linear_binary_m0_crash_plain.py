"""max-autotune with freezing and CPP GEMM: a frozen fp16 linear followed by a residual add
(`x @ W + y`, fused by the mkldnn pass into linear_binary) raises an AssertionError while the CPP
template generates its kernel when the batch is empty (M == 0): the residual `y` is missing from the
kernel's arguments. float32 and M > 0 are fine.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present,
prints a last line once fixed. Fails on torch 2.13.0+cpu. Needs a C++ compiler (as inductor does on CPU).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class LinearResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(226, 5, dtype=torch.float16), requires_grad=False)

    def forward(self, x, y):
        return x @ self.weight + y


x, y = torch.randn(0, 226, dtype=torch.float16), torch.randn(0, 5, dtype=torch.float16)  # an empty batch
with torch.no_grad(), torch._inductor.config.patch(freezing=True, max_autotune_gemm_backends="CPP,ATEN"):
    torch.compile(LinearResidual(), mode="max-autotune")(x, y)
print("no failure: the bug does not reproduce on this torch")
