"""Inductor's woq pattern rewrites a weight-only int8 linear to ATen's _weight_int8pack_mm, which dies
(SIGSEGV) for bfloat16 activations when K is not a multiple of 16.

Found by this suite on torch 2.13.0+cpu (the process oracle: the campaign's worker died). The compile
runs in a child process. Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import multiprocessing
import sys

import torch
import torch._inductor.config as inductor_config


class Int8Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, scale: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("scale", scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.weight.t().to(x.dtype)) * self.scale


def compile_and_run() -> None:
    weight = torch.randint(-8, 9, (16, 40), dtype=torch.int8)
    model = Int8Linear(weight, torch.full((16,), 0.5, dtype=torch.bfloat16))
    x = torch.randint(-3, 4, (24, 40)).to(torch.bfloat16)
    with torch.no_grad(), inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN",
                                                freezing=True, fx_graph_cache=False):
        torch.compile(model)(x)


if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=compile_and_run)
    child.start()
    child.join()
    print(f"torch {torch.__version__}: the compile's process exited with {child.exitcode}")
    sys.exit(1 if child.exitcode and child.exitcode < 0 else 0)
