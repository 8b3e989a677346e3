"""torch.compile(mode="max-autotune") of torch.baddbmm(input, a, b, alpha=0) returns NaN where a @ b has
an inf; eager (cuBLAS) returns beta * input there, as alpha=0 ignores the product. The same for
torch.addmm, and with beta=0 a NaN in input comes through (documented: "If beta is 0, then input will be
ignored, and nan and inf in it will not be propagated"). The autotuned Triton template's epilogue
multiplies by the zero scalar (torch/_inductor/kernel/mm_common.py: addmm_epilogue); inductor's addmm
decomposition has the same fault on the CPU (pytorch#196596).

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: the assertion fails while the bug is present,
prints a last line once fixed. Failed on torch 2.11.0+cu130 (H200). Needs torch with CUDA.
"""
import torch
import torch._inductor.config

print("torch", torch.__version__, "| CUDA", torch.version.cuda, "|", torch.cuda.get_device_name())
torch._inductor.config.max_autotune_gemm_backends = "TRITON"  # the template (ATen's extern kernel is right)
a, b = torch.randn(2, 8, 32, device="cuda"), torch.randn(2, 32, 16, device="cuda")
bias = torch.randn(2, 8, 16, device="cuda")
a[0, 0, 0] = float("inf")


def f(bias: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.baddbmm(bias, a, b, alpha=0.0)


eager, got = f(bias, a, b), torch.compile(f, mode="max-autotune")(bias, a, b)
assert eager.isfinite().all(), "eager itself is not finite: nothing to compare"
torch.testing.assert_close(got, eager)
print("no failure: the bug does not reproduce on this torch")
