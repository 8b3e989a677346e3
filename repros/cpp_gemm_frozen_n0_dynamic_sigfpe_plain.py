"""torch.compile(dynamic=True) with freezing and max-autotune (ATEN,CPP backends) of an fp16 linear whose
weight has no columns (N == 0) kills the process with SIGFPE ("Floating point exception") while
benchmarking the CPP GEMM template: its symbolic-M kernel divides by the zero number of N blocks. Eager
returns an empty (8, 0) tensor.

Not filed upstream yet; same root cause as cpp_gemm_frozen_n0_compile_error (with static shapes the division
is a constant and the C++ does not compile). Plain-torch repro by mm-autotune-fuzz: the process dies while
the bug is present, prints a last line once fixed. Died on torch 2.13.0+cpu on an AMD EPYC (AVX2) host,
where fp16 linears are not packed for oneDNN and stay mm.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(16, 0, dtype=torch.float16), requires_grad=False)  # N = 0

    def forward(self, x):
        return torch.mm(x, self.weight)


with torch.no_grad(), torch._inductor.config.patch(freezing=True, max_autotune=True,
                                                   max_autotune_gemm_backends="ATEN,CPP"):
    got = torch.compile(Linear(), dynamic=True)(torch.randn(8, 16, dtype=torch.float16))
assert got.shape == (8, 0), got.shape
print("no failure: the bug does not reproduce on this torch")
