"""Inductor's CPU addmm decomposition (M == 1, K and N <= 16) multiplies the bias by a float
beta = 0.0, so NaN in the bias stays where eager drops it (pytorch#196596).

Found by this suite on torch 2.13.0+cpu (numerics oracle). Exit status: 1 while the bug is present,
0 once fixed. Needs only torch.
"""

import sys

import torch

a, b = torch.ones(1, 8), torch.ones(8, 8)
bias = torch.zeros(1, 8)
bias[0, 0] = float("nan")
want = torch.addmm(bias, a, b, beta=0.0)
got = torch.compile(lambda bias, a, b: torch.addmm(bias, a, b, beta=0.0))(bias, a, b)
ok = torch.equal(got, want)
print(f"torch {torch.__version__}: {'right values' if ok else 'BUG: NaN from a zero-scaled bias'}")
sys.exit(0 if ok else 1)
