"""torch.compile of an int32 bmm with M == 1 (or N == 1) on the CPU returns int64; eager returns int32.
tuned_bmm (torch/_inductor/kernel/bmm.py) lowers such a bmm as sum(a * b), and an integer sum is
int64; the CUDA branch of the same decomposition is limited to float dtypes, the CPU one is not.
Also through torch.einsum('mk,kn->mn', a, b) with one row, and int16/int8/uint8.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: fails an assertion while the bug is
present, prints a last line once fixed. Fails on torch 2.13.0+cpu (any compile mode).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
a = torch.randint(0, 3, (2, 1, 7), dtype=torch.int32)
b = torch.randint(0, 3, (2, 7, 3), dtype=torch.int32)
got = torch.compile(torch.bmm)(a, b)
assert got.dtype == torch.bmm(a, b).dtype, f"compiled {got.dtype}, eager {torch.bmm(a, b).dtype}"
print("no failure: the bug does not reproduce on this torch")
