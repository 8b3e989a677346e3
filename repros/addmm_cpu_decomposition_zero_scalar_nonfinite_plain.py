"""torch.compile (any mode) of `torch.addmm(bias, a, b, beta=0.0)` on the CPU with M == 1 and K, N
<= 16: inductor's addmm decomposition computes `beta * bias` with the float beta = 0.0, so NaN in
the bias stays in the result, where eager drops a zero-scaled bias (pytorch#196596, fix PR #196600
open). M > 1, K or N > 16, or an int beta = 0 pass.

Plain-torch repro by mm-autotune-fuzz: an assertion fails while the bug is present, prints a last
line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
a, b = torch.ones(1, 8), torch.ones(8, 8)
bias = torch.zeros(1, 8)
bias[0, 0] = float("nan")
want = torch.addmm(bias, a, b, beta=0.0)  # eager: 8.0 everywhere
got = torch.compile(lambda bias, a, b: torch.addmm(bias, a, b, beta=0.0))(bias, a, b)
assert torch.equal(got, want), f"compiled {got.tolist()}, eager {want.tolist()}"
print("no failure: the bug does not reproduce on this torch")
