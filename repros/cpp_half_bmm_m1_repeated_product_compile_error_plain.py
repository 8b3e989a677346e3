"""torch.compile on the CPU: the same bf16 (or fp16) bmm with M == 1 twice in one graph emits C++ that
does not compile ("conflicting declaration 'auto at_BFloat16_tmp_acc0_vec'"). float32, two different
products, or M == 2 compile. Eager is fine.

Plain-torch repro by mm-autotune-fuzz: raises while the bug is present, prints a last line once fixed.
Fails on torch 2.13.0+cpu and 2.11.0 (CPU).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
a, b = torch.randn(2, 1, 15, dtype=torch.bfloat16), torch.randn(2, 15, 33, dtype=torch.bfloat16)
out = torch.compile(lambda a, b: torch.cat([a @ b, a @ b], dim=-2))(a, b)
torch.testing.assert_close(out, torch.cat([a @ b, a @ b], dim=-2))
print("no failure: the bug does not reproduce on this torch")
