"""torch.compile (any mode) with post_grad_fusion_options={"decompose_mm_pass": {}} of
`torch.addmm(b, x, w, beta=0.5, alpha=-1)` with x of one row (M == 1; on CUDA the pass takes
M >= 10240 with K and N < 32): fx_passes/decompose_mem_bound_mm.py's decompose_addmm replaces it
with `sum(x[:, :, None] * w[None], dim=-2) + b`, as if beta = alpha = 1 (its pattern
`CallFunction(aten.addmm, Arg(), Arg(), Arg())` matches the scalar kwargs too). Two rows, or
beta = alpha = 1, pass.

Plain-torch repro by mm-autotune-fuzz (found by a 5-minute CPU noise campaign, seed 3, as
tolerance:addmm:bfloat16 with alpha = -1 and a 0-d bias): an assertion fails while the bug is
present, prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch
import torch._inductor.config


def f(b: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.addmm(b, x, w, beta=0.5, alpha=-1.0)


print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
g = torch.Generator().manual_seed(0)
x, w = torch.randint(-4, 5, (1, 8), generator=g).float(), torch.randint(-4, 5, (8, 190), generator=g).float()
b = torch.randint(-4, 5, (190,), generator=g).float()
with torch._inductor.config.patch({"post_grad_fusion_options": {"decompose_mm_pass": {}}}):
    got = torch.compile(f)(b, x, w)
err = (got - f(b, x, w)).abs().max().item()
assert torch.allclose(got, f(b, x, w), atol=1e-3), f"compiled differs from eager by up to {err}"
print("no failure: the bug does not reproduce on this torch")
