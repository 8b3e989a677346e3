"""torch.baddbmm on CPU in bfloat16/float16 with alpha=0 and beta=0 does not return zeros: the result is
left uninitialized (compiled code calling the extern kernel inherits it). The docs: "If beta is 0, then
input will be ignored, and nan and inf in it will not be propagated"; alpha=0 drops the product.

Not filed upstream yet (ATen, not inductor). Host condition: bf16/fp16 baddbmm goes through oneDNN's matmul
only where torch.ops.mkldnn._is_mkldnn_bf16_supported() (fp16: ..._fp16_supported()) is True (AVX-512
class x86 CPUs); elsewhere ATen's own kernel returns zeros. Plain-torch repro by mm-autotune-fuzz: the
assertion fails while the bug is present, prints a last line once fixed. Failed on torch 2.13.0+cpu and
2.11 on the hosts that found it; passes on an AMD EPYC Zen 3 (AVX2: oneDNN bf16 path off).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability(),
      "| oneDNN bf16 matmul", torch.ops.mkldnn._is_mkldnn_bf16_supported())
bias = torch.ones(48, dtype=torch.bfloat16)
a, b = torch.ones(2, 1, 128, dtype=torch.bfloat16), torch.ones(2, 128, 48, dtype=torch.bfloat16)
out = torch.full((2, 1, 48), float("nan"), dtype=torch.bfloat16)  # whatever memory the result lands in
torch.baddbmm(bias, a, b, alpha=0.0, beta=0.0, out=out)
assert not out.isnan().any() and not out.any(), f"expected zeros, got {out.flatten()[:4].tolist()}"
for _ in range(20):  # the functional form: the result is fresh memory, its garbage depends on the allocator
    got = torch.baddbmm(bias, a, b, alpha=0.0, beta=0.0)
    assert not got.any(), \
        f"expected zeros, got {int(got.count_nonzero())} non-zero elements, e.g. {got.flatten()[:4].tolist()}"
print("no failure: the bug does not reproduce on this host and torch")
