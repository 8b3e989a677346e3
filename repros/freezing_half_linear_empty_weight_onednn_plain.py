"""torch.compile with freezing of a bf16/fp16 linear (mm with a constant weight) whose weight is empty
(K == 0 here, or N == 0): freezing packs it for oneDNN's inner product, which raises "could not create a
primitive descriptor for the inner product forward propagation primitive". Eager returns zeros.

Not filed upstream yet; same root cause as freezing_mkl_linear_n0_sigfpe (freezing packs empty weights).
Plain-torch repro by mm-autotune-fuzz: raises while the bug is present, prints a last line once fixed.
Host condition: freezing packs bf16 (fp16) weights only where torch.ops.mkldnn._is_mkldnn_bf16_supported()
(_fp16_) is True (AVX-512 class x86; `_is_packable_linear` checks it); elsewhere nothing is packed and it
compiles. Failed on torch 2.13.0+cpu and 2.11 on the hosts that found it; passes on an AMD EPYC Zen 3 (AVX2).
max-autotune is not needed.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability(),
      "| oneDNN bf16", torch.ops.mkldnn._is_mkldnn_bf16_supported())


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(0, 4, dtype=torch.bfloat16), requires_grad=False)  # K = 0

    def forward(self, x):
        return torch.mm(x, self.weight)


with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    torch.compile(Linear())(torch.randn(3, 0, dtype=torch.bfloat16))
print("no failure: the bug does not reproduce on this torch")
