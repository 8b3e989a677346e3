"""max-autotune with freezing and CPP GEMM: an input with M == 0 rows gives C++ that does not compile:
the kernel declares `constexpr int64_t Mc_blocks = 0;` and divides by it ("division by zero is not a
constant expression"). With ATEN in the backend set the broken choice is dropped while autotuning.

Not filed upstream yet; same root cause as cpp_gemm_frozen_n0_compile_error (CPP templates are offered for
empty problems). Plain-torch repro by mm-autotune-fuzz: raises while the bug is present, prints a last line
once fixed. Fails on torch 2.13.0+cpu. Needs a C++ compiler (as inductor does on CPU).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(214, 255), requires_grad=False)

    def forward(self, x):
        return torch.mm(x, self.weight)


with torch.no_grad(), torch._inductor.config.patch(freezing=True, max_autotune_gemm_backends="CPP"):
    torch.compile(Linear(), mode="max-autotune")(torch.randn(0, 214))  # M = 0
print("no failure: the bug does not reproduce on this torch")
