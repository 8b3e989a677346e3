"""Two models of the same architecture holding a 0-d parameter (a scalar bias), frozen, compiled one
after the other with the FX graph cache on (inductor's default): the second loads the first one's
graph from the cache, where the first model's scalar is inlined as a literal (torch 2.13 CPU:
off by the difference of the two biases; with fx_graph_cache=False both are right).

Plain-torch repro by mm-autotune-fuzz (found by its warm-cache compile of a frozen case on another
model's weights, as tolerance:baddbmm:float32): an assertion fails while the bug is present,
prints a last line once fixed.
"""
import torch
import torch._inductor.config


class Model(torch.nn.Module):
    def __init__(self, w: torch.Tensor, b: torch.Tensor) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(w, requires_grad=False)
        self.b = torch.nn.Parameter(b, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.b, x, self.w)


print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
torch.manual_seed(0)
models = [Model(torch.randn(3, 16, 8), torch.tensor(float(i))).eval() for i in (1, 5)]
x = torch.randn(3, 4, 16)
with torch.no_grad(), torch._inductor.config.patch({"freezing": True, "fx_graph_cache": True}):
    for i, model in enumerate(models):
        got, want = torch.compile(model)(x), model(x)
        err = (got - want).abs().max().item()
        assert err < 1e-4, f"model {i}: compiled differs from eager by up to {err}"
print("no failure: the bug does not reproduce on this torch")
