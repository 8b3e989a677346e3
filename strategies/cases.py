"""Cases for mm, addmm and bmm: shapes, strides, dtypes, values and configs, valid on the device."""

from __future__ import annotations

from hypothesis import strategies as st

from strategies.case import OPS, Case, TensorSpec
from strategies.configs import autotune_configs
from strategies.layouts import strided
from strategies.shapes import dims, matmul_dims

DEVICE_DTYPES = {"cpu": ("float32", "bfloat16", "float16"), "cuda": ("float32", "float16", "bfloat16")}
MAX_ELEMENTS = {"cpu": 1 << 16, "cuda": 1 << 22}
MAX_DIM = {"cpu": 300, "cuda": 2100}
SCALARS = (1.0, 0.0, 0.5, 2.0, -1.0)


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@st.composite
def _bias(draw: st.DrawFn, m: int, n: int, dtype: str) -> TensorSpec:
    shape = draw(st.sampled_from(((n,), (1, n), (m, n), (m, 1))))
    if len(shape) == 1:
        return TensorSpec(shape, (1,), draw(st.sampled_from((0, 3))), dtype)
    return draw(strided(shape, dtype))


@st.composite
def cases(draw: st.DrawFn, op: str | None = None, device: str | None = None) -> Case:
    """One Case of `op` (any of OPS when None) on `device` (CUDA when present, else CPU)."""
    device = device or default_device()
    op = op or draw(st.sampled_from(OPS))
    dtype = draw(st.sampled_from(DEVICE_DTYPES[device]))
    m, n, k = draw(matmul_dims(MAX_DIM[device], MAX_ELEMENTS[device]))
    batch = (draw(dims(9)),) if op == "bmm" else ()
    inputs = [draw(strided((*batch, m, k), dtype)), draw(strided((*batch, k, n), dtype))]
    params = {}
    if op == "addmm":
        inputs.append(draw(_bias(m, n, dtype)))
        params = {"alpha": draw(st.sampled_from(SCALARS)), "beta": draw(st.sampled_from(SCALARS))}
    return Case.make(
        op=op, inputs=tuple(inputs), device=device, config=draw(autotune_configs(device)), params=params,
        value_mode=draw(st.sampled_from(("exact_int", "normal"))), seed=draw(st.integers(0, 2**16)),
        frozen_weights=device == "cpu" and draw(st.booleans()),
        tf32=device == "cuda" and dtype == "float32" and draw(st.booleans()),
    )
