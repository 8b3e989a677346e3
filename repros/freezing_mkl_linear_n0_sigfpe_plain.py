"""torch.compile with freezing of a float32 linear (mm with a constant weight) whose weight has no columns
(N == 0), once M > 128: on affected hosts the process dies with SIGFPE ("Floating point exception") while
freezing packs the weight for MKL (torch.ops.mkl._mkl_reorder_linear_weight -> cblas_sgemm_pack). Eager
returns an empty (129, 0) tensor.

Not filed upstream yet; same root cause as freezing_half_linear_empty_weight_onednn (freezing packs empty
weights: `_is_packable_linear` in torch/_inductor/fx_passes/mkldnn_fusion.py accepts them). Plain-torch repro
by mm-autotune-fuzz: the process dies while the bug is present, prints a last line once fixed.
Died on torch 2.13.0+cpu on the host that found it; does NOT die on an AMD EPYC Zen 3 (AVX2, no AVX-512,
oneMKL 2024.2) for any M, K or thread count tried, although freezing takes the MKL path there too (MKL packs
the empty weight from a NULL pointer without complaint). MKL picks its packing kernels per ISA, and three
other bugs seen on the same torch (bf16 freezing, bf16 baddbmm, int8 _int_mm) do not reproduce here either
because they need oneDNN's AVX-512 paths: the likely condition is an AVX-512 host (untested: none here).
freezing_mkl_linear_n0_sigfpe_host.py maps the condition (CPU, ISA, MKL path, threads) where it dies.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 0), requires_grad=False)  # N = 0

    def forward(self, x):
        return torch.mm(x, self.weight)


with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    torch.compile(Linear())(torch.randn(129, 4))
print("no failure: the bug does not reproduce on this host and torch")
