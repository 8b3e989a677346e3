"""max-autotune CPP bmm recompiled because x's batch stride changed emits C++ that does not compile
('ks1' was not declared in this scope): the symbolic stride is used but never declared.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present, prints a
last line once fixed. Fails on torch 2.13.0+cpu and 2.11 (CPU). Passes with backends "ATEN,CPP" (the CPP
choice is dropped while benchmarking) or the default set, and when M, the batch size or w's stride changes.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
w = torch.randn(2, 16, 8)
bmm = torch.compile(torch.bmm, mode="max-autotune")
with torch._inductor.config.patch(max_autotune_gemm_backends="CPP"):
    bmm(torch.randn(2, 4, 16), w)
    bmm(torch.randn(2, 80)[:, :64].view(2, 4, 16), w)  # batch stride 80 instead of 64: recompiles
print("no failure: the bug does not reproduce on this torch")
