"""With freezing and the FX graph cache on (inductor's defaults), a second model of the same
architecture compiled with max-autotune's CPP GEMM template loads the first one's graph from the
cache, with the template's packed copy of the first model's weight: wrong results.

Found by this suite on torch 2.13.0+cpu (numerics oracle, its warm-cache compile on other values).
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


torch.manual_seed(0)
blocks = [Block().half().eval() for _ in range(2)]
x = torch.randn(8, 32).half()
options = {"freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP", "fx_graph_cache": True}
with torch.no_grad(), torch._inductor.config.patch(options):
    errors = [(torch.compile(b)(x).float() - b(x).float()).abs().max().item() for b in blocks]
ok = max(errors) < 1e-2
bug = f"BUG: a block computes with another block's weights (errors {errors})"
print(f"torch {torch.__version__}: {'right values' if ok else bug}")
sys.exit(0 if ok else 1)
