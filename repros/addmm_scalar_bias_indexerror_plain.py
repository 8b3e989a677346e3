"""torch.compile(mode="max-autotune") of torch.addmm with a 0-d bias raises IndexError in tuned_addmm.

pytorch/pytorch#197107 (fix: #197214). Plain-torch repro by mm-autotune-fuzz: raises while the bug
is present, prints a last line once fixed. Fails on torch 2.13.0+cpu; not on 2.11 (the check is newer).
Passes without mode="max-autotune"; still fails with max_autotune_gemm_backends="ATEN".
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
bias, a, b = torch.tensor(1.5), torch.randn(4, 8), torch.randn(8, 17)
torch.compile(torch.addmm, mode="max-autotune")(bias, a, b)
print("no failure: the bug does not reproduce on this torch")
