"""The rounding error a correct kernel may put into an mm-family result, per kernel.

Every term is an absolute bound per output element, a float64 tensor, derived from the float64
reference: `value` (the exact result of the dtype-rounded inputs), `mag` (sum |p_k| over the K
products p_k) and `spread` (sqrt of sum s_k^2 over the prefix sums s_k = p_1 + ... + p_k). A correct
kernel:
- multiplies exactly or in float32 and accumulates in float32 (ATen/cuBLAS/oneDNN, Triton, CPP)
  in an order that does not depend on the values: `ACCUMULATION_LAMBDA * u32 * (spread + mag)`.
  Rounding errors d_j (|d_j| <= u32, independent, mean zero) weighted by the partial sums t_j
  exceed lambda * u32 * sqrt(sum t_j^2) with probability below 2 exp(-lambda^2 / 2) (Azuma;
  2e-14 for lambda = 8); `spread` is sum t_j^2 for the natural order (for same-sign products the
  largest of any order, for random signs the same in distribution) and `mag` adds a floor for
  orders whose partial sums happen to be larger, and for the products' own rounding; it may flush
  subnormal products and partial sums to zero: 2 K times float32's smallest normal (`FLUSHED`);
- on NVIDIA tensor cores (fp16/bf16/fp8 operands, TF32) the accumulator truncates what it adds,
  a bias that grows with every partial sum: `u32 * sum |s_k| / 2` (twice the worst measured on an
  H200: same-sign fp16 data, K = 8192, `python -m fuzz.tools.tightness --stress`); fp8 tensor cores keep
  only about 14 bits while they accumulate (cuBLAS promotes to float32 now and then: its own
  _scaled_mm exceeded a float32 bound 3.9x on an H200), so for fp8 operands both terms use 2^-14;
- rounds fp32 inputs to TF32 only where the case allows TF32 (CUDA): 2 * 2^-10 * mag (both operands
  truncated to 10 mantissa bits, worst case);
- rounds split-K partial sums to fp16/bf16 only for cuBLAS under
  `allow_{fp16,bf16}_reduced_precision_reduction` (the case says whether it is on): 2 u_out mag;
- rounds each quantity it may materialize in the output dtype once (the result; for addmm-style
  ops also each term of the sum): u_out * |quantity|, plus half the smallest subnormal.
"""

from __future__ import annotations

import dataclasses
import math

import torch

Tensor = torch.Tensor
UNIT_ROUNDOFF = {torch.float64: 2.0**-53, torch.float32: 2.0**-24, torch.float16: 2.0**-11,
                 torch.bfloat16: 2.0**-8, torch.float8_e4m3fn: 2.0**-4, torch.float8_e5m2: 2.0**-3}
ACCUMULATE_U = 2.0**-24  # every correct kernel accumulates in float32 (or wider)
FP8_ACCUMULATE_U = 2.0**-14  # fp8 tensor cores: about 14 bits kept while accumulating
ACCUMULATION_LAMBDA = 8.0
FLUSHED = torch.finfo(torch.float32).smallest_normal
"""What a float32 accumulator that flushes subnormals to zero (FTZ: GPU kernels, oneDNN) may lose on
each product and each partial sum: a chained product of "tiny" values lies wholly below it (an H200's
Triton chain exceeded the bound without it 21x, cuBLAS 4.6x: subnormal products round absolutely)."""
TF32_TRUNCATION = 2.0**-10  # one unit in the last place of TF32's 10-bit mantissa


@dataclasses.dataclass(frozen=True)
class KernelModel:
    """What a correct kernel computing the result may do beyond float32 accumulation."""

    tf32: bool = False  # float32 operands may be rounded to TF32
    half_partials: bool = False  # split-K partial sums may be rounded to the (fp16/bf16) output dtype
    tensor_cores: bool = False  # the accumulator may truncate (NVIDIA tensor cores)
    fp8: bool = False  # fp8 tensor cores: a narrow accumulator


def unit_roundoff(dtype: torch.dtype) -> float:
    """Relative rounding error of one rounding to `dtype` (0 for integers: exact)."""
    return UNIT_ROUNDOFF.get(dtype, 0.0) if dtype.is_floating_point else 0.0


def underflow(dtype: torch.dtype) -> float:
    """Absolute error of rounding into the subnormal range: half the smallest subnormal."""
    if not dtype.is_floating_point:
        return 0.0
    info = torch.finfo(dtype)
    return float(info.smallest_normal * info.eps / 2)


@dataclasses.dataclass
class Prefixes:
    """Per element of a sum of products: sqrt(sum s_k^2) and sum |s_k| over its prefix sums s_k."""

    spread: Tensor
    drift: Tensor
    terms: int = 0  # how many products each sum adds up


def accumulation(mag: Tensor, prefixes: Prefixes, out_dtype: torch.dtype, model: KernelModel) -> Tensor:
    """Error of forming a sum of products (magnitudes adding up to `mag`) before the final
    rounding to `out_dtype` (zero for integer results)."""
    if not out_dtype.is_floating_point:
        return torch.zeros_like(mag)
    unit = FP8_ACCUMULATE_U if model.fp8 else ACCUMULATE_U
    bound = ACCUMULATION_LAMBDA * unit * (prefixes.spread + mag) + 2 * prefixes.terms * FLUSHED
    if model.tensor_cores:
        bound = bound + unit * prefixes.drift / 2
    if model.tf32:
        bound = bound + 2 * TF32_TRUNCATION * mag
    if model.half_partials and out_dtype in (torch.float16, torch.bfloat16):
        bound = bound + 2 * unit_roundoff(out_dtype) * mag
    return bound


PREFIX_CHUNK = 1 << 24
"""Elements of the (..., rows, K, columns) product tensor formed at once (128 MiB of float64)."""


def prefixes(a: Tensor, b: Tensor) -> Prefixes:
    """The prefix sums of the products of each element of `a @ b` (float64, batch dims
    broadcasting like matmul), a chunk of rows at a time: each chunk's prefix sums are reduced
    before the next is formed, so memory stays near PREFIX_CHUNK elements (one row of every
    batch at least) whatever the case's size."""
    a, b = torch.broadcast_tensors(  # type: ignore[no-untyped-call]  # torch 2.13 leaves it unannotated
        a[..., :, :, None], b[..., None, :, :])  # (..., M, K, N)
    per_row = math.prod(a.shape[:-3]) * a.shape[-2] * a.shape[-1]
    rows = max(1, PREFIX_CHUNK // max(1, per_row))
    spread, drift = [], []
    for i in range(0, a.shape[-3], rows):
        sums = (a[..., i:i + rows, :, :] * b[..., i:i + rows, :, :]).cumsum(-2)
        spread.append(sums.square().sum(-2).sqrt())
        drift.append(sums.abs().sum(-2))
        del sums
    if not spread:
        empty = torch.zeros(a.shape[:-2] + a.shape[-1:], dtype=a.dtype, device=a.device)
        return Prefixes(empty, empty, a.shape[-2])
    return Prefixes(torch.cat(spread, -2), torch.cat(drift, -2), a.shape[-2])


def row_prefixes(values: Tensor) -> Prefixes:
    """The prefix sums of a sum over the last dim of `values`."""
    sums = values.cumsum(-1)
    return Prefixes(sums.square().sum(-1).sqrt(), sums.abs().sum(-1), values.shape[-1])


def rounding(quantity: Tensor, dtype: torch.dtype) -> Tensor:
    """Error of rounding `quantity` to `dtype` once."""
    return unit_roundoff(dtype) * quantity.abs() + underflow(dtype)


def representable(values: Tensor, dtype: torch.dtype) -> bool:
    """Every (finite) value survives a round trip through `dtype` unchanged."""
    finite = values[torch.isfinite(values)]
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        return bool(((finite == finite.round()) & (finite.abs() <= info.max)).all())
    return bool(torch.equal(finite.to(dtype).double(), finite))
