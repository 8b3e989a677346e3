"""Two blocks of the same architecture, each compiled on its own (regional compilation) with
freezing and max-autotune on the CPU, inductor's FX graph cache on (its default): the second block
loads the first one's compiled graph from the cache, and with it the CPP GEMM template's packed
copy of the FIRST block's weight (a frozen weight enters the cache key by its metadata only).
torch 2.13 CPU, float16: block 1 off by ~1.4; with fx_graph_cache=False, or ATen only, both right.

Plain-torch repro by mm-autotune-fuzz (found by its warm-cache compile on other values, as
tolerance:mm:float16): an assertion fails while the bug is present, prints a last line once fixed.
"""
import torch
import torch._inductor.config


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
torch.manual_seed(0)
blocks = [Block().half().eval() for _ in range(2)]
x = torch.randn(8, 32).half()
options = {"freezing": True, "max_autotune": True, "max_autotune_gemm_backends": "CPP", "fx_graph_cache": True}
with torch.no_grad(), torch._inductor.config.patch(options):
    for i, block in enumerate(blocks):
        got, want = torch.compile(block)(x), block(x)
        err = (got.float() - want.float()).abs().max().item()
        assert err < 1e-2, f"block {i}: compiled differs from eager by up to {err}"
print("no failure: the bug does not reproduce on this torch")
