"""max-autotune with freezing: a linear layer whose weight has K == 0 (no reduction) crashes in the CPP GEMM
template's lowering: TypeError: Cannot convert complex to float (get_cache_blocking; oneMKL also prints
"Parameter 9 was incorrect on entry to cblas_sgemm_pack"). Eager returns zeros.

Not filed upstream yet; same root cause as cpp_bmm_empty_dim_crash (CPP templates are offered for empty
problems). Plain-torch repro by mm-autotune-fuzz: raises while the bug is present, prints a last line once
fixed. Fails on torch 2.13.0+cpu and 2.11 (CPU).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(0, 32), requires_grad=False)  # K = 0

    def forward(self, x):
        return torch.mm(x, self.weight)


with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    torch.compile(Linear(), mode="max-autotune")(torch.randn(4, 0))
print("no failure: the bug does not reproduce on this torch")
