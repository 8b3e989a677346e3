"""max-autotune with freezing and the CPP GEMM template: a frozen weight that is a column slice of a
fused parameter (`W[:, n:2 * n]`, as a model takes its share of a fused qkv weight) gives wrong
values (float32 and float16; ATen and the unsliced weight are right).

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: the assertion fails while the bug is
present, prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class FusedProjection(torch.nn.Module):
    def __init__(self, fused):
        super().__init__()
        self.fused = torch.nn.Parameter(fused, requires_grad=False)  # (K, 3 * N): three weights side by side

    def forward(self, x):
        n = self.fused.shape[1] // 3
        return torch.mm(x, self.fused[:, n:2 * n])


fused = torch.randint(-3, 4, (32, 48)).float()
x = torch.randint(-3, 4, (24, 32)).float()
with torch.no_grad(), torch._inductor.config.patch(freezing=True, max_autotune_gemm_backends="CPP"):
    got = torch.compile(FusedProjection(fused), mode="max-autotune")(x)
want = x @ fused[:, 16:32]  # small integers: exact in float32
assert torch.equal(got, want), f"{int((got != want).sum())} of {want.numel()} elements differ"
print("no failure: the bug does not reproduce on this torch")
