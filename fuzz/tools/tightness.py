"""How tight, and how safe, the numerics bound is (oracles/error_model.py).

`python -m fuzz.tools.tightness` prints, per dtype and K, the median bound over the median |result| of
a 64 x 64 mm with normal values and the worst error / bound of eager and of every kernel choice
compiled alone (above 1.0 fails). `--stress` measures the accumulation term alone on the
machine's own kernels (ATen's, and on CUDA a plain Triton `tl.dot` loop), with float32 results,
random-sign and same-sign data, K up to 8192: the worst error / accumulation bound must stay well
below 1 for the model to be safe."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator

import torch

from fuzz.run.harness import run_case
from oracles.error_model import KernelModel, accumulation, prefixes
from oracles.numerics import check_ratio
from strategies.case import Case, TensorSpec, contiguous_strides

KS = (16, 64, 256, 1024, 4096)
STRESS_KS = (16, 128, 1024, 4096, 8192)
DTYPES = ("float32", "float16", "bfloat16")


def mm_case(dtype: str, k: int, device: str) -> Case:
    shapes = ((64, k), (k, 64))
    cuda = device == "cuda"
    return Case.make(op="mm", inputs=tuple(TensorSpec(s, contiguous_strides(s), 0, dtype) for s in shapes),
                     device=device, value_mode="normal", seed=k, every_choice=True,
                     config={"max_autotune": True, "max_autotune_gemm_backends": "ATEN,TRITON" if cuda else "ATEN",
                             **({"test_configs.max_mm_configs": 2} if cuda else {})})


def table(device: str) -> Iterator[tuple[str, int, float, float, float]]:
    """(dtype, K, median bound / median |result|, eager's worst ratio, the compiled kernels' worst)."""
    for dtype in DTYPES:
        for k in KS:
            obs = run_case(mm_case(dtype, k, device))
            first = obs.results[0]
            eager = check_ratio(type(first)(**{**first.__dict__, "compiled": first.eager}))
            tight = float(first.bound.median() / first.reference.abs().median())
            yield dtype, k, tight, eager, max(check_ratio(c) for c in obs.results)


def _triton_mm() -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """A plain Triton matmul (tl.dot into a float32 accumulator) with a float32 result."""
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            y = tl.load(b + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y, input_precision="ieee" if x.dtype == tl.float32 else None)
        tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float32)
        kernel[(triton.cdiv(a.shape[0], 64), triton.cdiv(b.shape[1], 64))](a, b, c, a.shape[0], b.shape[1], a.shape[1],
                                                                          BM=64, BN=64, BK=32)
        return c
    return mm


def stress(device: str) -> Iterator[tuple[str, str, str, int, float]]:
    """(kernel, dtype, data, K, worst |error| / accumulation bound) of float32-result matmuls."""
    kernels: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
        "aten": lambda a, b: torch.mm(a, b) if a.dtype == torch.float32 else torch.mm(a.float(), b.float())}
    if device == "cuda":
        kernels["aten"] = lambda a, b: torch.mm(a, b, out_dtype=torch.float32) if a.dtype != torch.float32 \
            else torch.mm(a, b)
        kernels["triton"] = _triton_mm()
    gen = torch.Generator().manual_seed(0)
    for name, mm in kernels.items():
        for dtype in DTYPES:
            for data in ("random-sign", "same-sign"):
                for k in STRESS_KS:
                    a, b = (torch.randn(s, generator=gen, dtype=torch.float64) for s in ((128, k), (k, 128)))
                    if data == "same-sign":
                        a, b = a.abs(), b.abs()
                    a, b = (t.to(getattr(torch, dtype)) for t in (a, b))
                    wa, wb = a.double(), b.double()
                    got = mm(a.to(device), b.to(device)).double().cpu()
                    model = KernelModel(tensor_cores=device == "cuda" and dtype != "float32")
                    bound = accumulation(wa.abs() @ wb.abs(), prefixes(wa, wb), torch.float32, model)
                    yield name, dtype, data, k, float(((got - wa @ wb).abs() / bound).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--stress", action="store_true", help="measure the accumulation term on this machine's kernels")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    if args.stress:
        print("| kernel | dtype | data | K | worst error / accumulation bound |\n|---|---|---|---|---|")
        for name, dtype, data, k, ratio in stress(args.device):
            print(f"| {name} | {dtype} | {data} | {k} | {ratio:.4f} |", flush=True)
        return
    print("| dtype | K | median bound / median abs(result) | eager worst error/bound | compiled worst error/bound |")
    print("|---|---|---|---|---|")
    for dtype, k, tight, eager, compiled in table(args.device):
        print(f"| {dtype} | {k} | {tight:.2e} | {eager:.3f} | {compiled:.3f} |", flush=True)


if __name__ == "__main__":
    main()
