"""max-autotune with freezing: `torch.addmm(b, x, w)` with a 0-d bias parameter and an empty batch
(M == 0). On torch 2.11 (CPU, ATEN or ATEN,CPP, float32 and bfloat16) the compile fails with
`InductorError: LoweringException: AssertionError: <class 'torch._inductor.ir.Constant'>`
(ir.py unwrap_storage_for_input): tuned_addmm's empty-problem path hands the unexpanded constant bias
to aten_addmm. M == 4 compiles; torch 2.13 computes both.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present,
prints a last line once fixed. Fails on torch 2.11.0.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 16), requires_grad=False)
        self.b = torch.nn.Parameter(torch.tensor(0.5), requires_grad=False)  # a 0-d bias

    def forward(self, x):
        return torch.addmm(self.b, x, self.w)


model = Model().eval()
x = torch.randn(0, 8)
with torch.no_grad(), torch._inductor.config.patch(freezing=True, max_autotune_gemm_backends="ATEN"):
    got = torch.compile(model, mode="max-autotune")(x)
assert got.shape == (0, 16), got.shape
print("no failure: the bug does not reproduce on this torch")
