"""Inductor CPP GEMM template reads a frozen weight sliced from a fused parameter wrong.

Found by this suite on torch 2.13.0+cpu (numerics oracle, exact-integer values). With freezing and the
CPP GEMM backend, a weight that is a column slice `W[:, n:2 * n]` of a frozen parameter gives wrong
values (float32 and float16). ATen-only backends give the right answer.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch
import torch._inductor.config as inductor_config


class FusedProjection(torch.nn.Module):
    def __init__(self, fused: torch.Tensor) -> None:
        super().__init__()
        self.fused = torch.nn.Parameter(fused, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.fused.shape[1] // 3
        return torch.mm(x, self.fused[:, n:2 * n])


fused = torch.randint(-3, 4, (32, 48)).float()
x = torch.randint(-3, 4, (24, 32)).float()
with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP",
                                            freezing=True, fx_graph_cache=False):
    got = torch.compile(FusedProjection(fused))(x)
wrong = int((got != x @ fused[:, 16:32]).sum())
print(f"torch {torch.__version__}: {wrong} of {got.numel()} elements wrong")
sys.exit(1 if wrong else 0)
