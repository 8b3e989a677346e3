"""torch.compile(mode="max-autotune") of an fp16 addmm with M=1, K=177 gives wrong values when inductor's
Triton mm template config BLOCK_M=16, BLOCK_N=16, BLOCK_K=128 (num_warps=1) runs it; the other configs
(BLOCK_K=16, 32) are right. The inputs are small integers, so the exact result is representable: not rounding.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: the assertion fails while the bug is present,
prints a last line once fixed. Failed on torch 2.11.0+cu130 / triton 3.6.0 (H200). Without the config pin
the wrong config wins only when it benchmarks fastest, so the pin (an inductor test hook) makes it reliable;
triton_addmm_alpha_beta_m1_kernel.py turns the generated kernel into a plain Triton script.
"""
import torch
import triton

print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| triton", triton.__version__, "|",
      torch.cuda.get_device_name())
gen = torch.Generator().manual_seed(0)
a = torch.randint(-2, 3, (1, 177), generator=gen).half().cuda()
b = torch.randint(-2, 3, (177, 16), generator=gen).half().cuda()[:, :15]  # leading dimension 16
bias = torch.randint(-2, 3, (15,), generator=gen).half().cuda()
exact = 2.0 * bias.double() + 2.0 * (a.double() @ b.double())
with torch._inductor.config.patch({"max_autotune_gemm_backends": "TRITON",
                                   "test_configs.autotune_choice_desc_regex": "BLOCK_K=128, BLOCK_M=16, BLOCK_N=16"}):
    got = torch.compile(torch.addmm, mode="max-autotune")(bias, a, b, alpha=2.0, beta=2.0)
torch.testing.assert_close(torch.addmm(bias, a, b, alpha=2.0, beta=2.0).double(), exact, rtol=0, atol=0)  # eager
torch.testing.assert_close(got.double(), exact, rtol=0, atol=0)
print("no failure: the bug does not reproduce on this torch")
