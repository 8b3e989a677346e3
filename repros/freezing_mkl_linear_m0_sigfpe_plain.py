"""torch.compile with freezing of a float32 linear (mm with a constant (214, 255) weight) called with an
input of 0 rows (M == 0): on affected hosts the process dies with SIGFPE ("Floating point exception")
while freezing packs the weight for MKL with batch size 0 (constant folding runs
torch.ops.mkl._mkl_reorder_linear_weight(weight, 0) -> cblas_sgemm_pack). Eager returns an empty
(0, 255) tensor; so does the same compile without freezing.

Not filed upstream yet; same family as freezing_mkl_linear_n0_sigfpe (freezing packs empty operands for
MKL: `_is_packable_linear` in torch/_inductor/fx_passes/mkldnn_fusion.py accepts a zero batch). Plain-torch
repro by mm-autotune-fuzz: the process dies while the bug is present, prints a last line once fixed.
Died on torch 2.13.0+cpu on an Intel Xeon with AVX-512 (2 cores, CI); does not die on an AMD EPYC Zen 3
(AVX2). Packing with batch size 0 died for (K, N) = (4096, 8), (200, 200), (214, 255), (256, 256) and
not for (182, 182), (257, 128), (214, 128), (512, 8) or smaller: MKL's packing kernel decides.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(214, 255), requires_grad=False)

    def forward(self, x):
        return torch.mm(x, self.weight)


with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    print(torch.compile(Linear())(torch.randn(0, 214)).shape)
print("no failure: the bug does not reproduce on this host and torch")
