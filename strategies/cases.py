"""Cases for every mm-family op: shapes, strides, dtypes, values, consumers, dynamic shapes and
configs, valid on the device. The public surface is `cases()`."""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from oracles.templates import cpp_eligible, triton_eligible
from strategies.backends import config_backends, join_backends
from strategies.case import Case, TensorSpec, contiguous_strides
from strategies.choices import rarely
from strategies.configs import autotune_configs
from strategies.dynamic import dim_roles, dynamic_shapes
from strategies.layouts import OUT_KINDS, STRIDE_KINDS, strided
from strategies.shapes import dims, matmul_dims
from strategies.vocabulary import (
    ACTIVATIONS,
    BACKWARD_STEPS,
    BACKWARD_VALUE_MODES,
    CAST_DTYPES,
    CAT_MM_STEPS,
    CONSUMERS,
    FLOAT_PRODUCT_OPS,
    FUSED_THIRD,
    INPUT_COUNT,
    INT8_FORMS,
    INTEGER_BITS,
    INTEGER_DTYPES,
    INTEGER_HEADROOM_BITS,
    INTEGER_STEPS,
    INTEGER_VALUE_MODES,
    PROJECTION_OPS,
    PROLOGUE_OPS,
    PROLOGUE_STEPS,
    RESULT_MUTATING_STEPS,
    SCALAR_SPELLINGS,
    SPELLINGS,
    UPCASTS,
    WEIGHT_FORMS,
    WEIGHT_READING_STEPS,
)

FLOAT_DTYPES = {"cpu": ("float32", "bfloat16", "float16"), "cuda": ("float32", "float16", "bfloat16")}
MAX_ELEMENTS = {"cpu": 1 << 16, "cuda": 1 << 22}
MAX_DIM = {"cpu": 300, "cuda": 2100}
SCALARS = (1.0, 0.0, 0.5, 2.0, -1.0, 0.3)
INTEGER_SCALARS = (1.0, 0.0, 2.0, -1.0)
"""alpha and beta of an integer product: integers (eager refuses others), not negative for uint8."""
DEVICE_OPS = {
    "cpu": ("mm", "addmm", "bmm", "baddbmm", "matmul", "int_mm", "scaled_mm", "mm_plus_mm"),
    "cuda": ("mm", "addmm", "bmm", "baddbmm", "matmul", "mm_out_dtype", "int_mm", "scaled_mm", "mm_plus_mm"),
}
OUTPUT_STEPS = ("return_twice", "mutate_input")
LAYOUT_STEPS = tuple(c for c in CONSUMERS if c not in OUTPUT_STEPS + CAT_MM_STEPS + ("add_bias_row", "projections"))


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def ops_for(device: str) -> tuple[str, ...]:
    """The ops `cases` draws on `device` (scaled_mm needs fp8 support: sm89 or newer)."""
    if device == "cuda":
        import torch

        if torch.cuda.is_available() and torch.cuda.get_device_capability() < (8, 9):
            return tuple(op for op in DEVICE_OPS["cuda"] if op != "scaled_mm")
    return DEVICE_OPS[device]


@st.composite
def _bias(draw: st.DrawFn, batch: tuple[int, ...], m: int, n: int, dtype: str) -> TensorSpec:
    """A bias broadcasting to (*batch, M, N): rank 0 to full, size-1 dims, stride-0 expansion,
    transposed or sliced views."""
    full = (*batch, m, n)
    rank = len(full) - draw(st.integers(0, len(full)))  # shrinks to the full bias, no broadcast dim
    shape = tuple(1 if draw(rarely(3)) else d for d in full[len(full) - rank:])
    if rank < 2:
        return TensorSpec(shape, tuple(draw(st.sampled_from((1, 0))) if d != 1 else 1 for d in shape),
                          draw(st.sampled_from((0, 3))), dtype)
    return draw(strided(shape, dtype))


@st.composite
def _operands(draw: st.DrawFn, op: str, device: str, dtype: str, m: int, n: int, k: int,
              batch: int, kinds: tuple[str, ...]) -> tuple[list[TensorSpec], dict[str, float]]:
    """The op's inputs for sizes (M, N, K, batch) and their alpha/beta."""
    params: dict[str, float] = {}
    if op in ("bmm", "baddbmm"):
        inputs = [draw(strided((batch, m, k), dtype, kinds)), draw(strided((batch, k, n), dtype, kinds))]
    elif op == "matmul":  # broadcast batch dims
        a_batch, b_batch = draw(st.sampled_from((((batch,), ()), ((), (batch,)), ((batch,), (1,)),
                                                  ((2, batch), (batch,)))))
        inputs = [draw(strided((*a_batch, m, k), dtype, kinds)), draw(strided((*b_batch, k, n), dtype, kinds))]
    elif op == "scaled_mm":  # fp8: A row-major, B column-major, tensor-wise or row-wise float32 scales
        b_dtype = draw(st.sampled_from(("float8_e4m3fn", "float8_e5m2"))) if dtype == "float8_e4m3fn" \
            else "float8_e4m3fn"
        rowwise = draw(st.booleans())
        inputs = [draw(strided((m, k), dtype, kinds)), TensorSpec((k, n), (1, k), 0, b_dtype),
                  TensorSpec((m, 1), (1, 1), 0, "float32") if rowwise else TensorSpec((), (), 0, "float32"),
                  TensorSpec((1, n), (n, 1), 0, "float32") if rowwise else TensorSpec((), (), 0, "float32")]
    else:
        inputs = [draw(strided((m, k), dtype, kinds)), draw(strided((k, n), dtype, kinds))]
        if op == "mm_plus_mm":
            k2 = draw(st.sampled_from((k, max(1, k // 2 + 1))))
            inputs += [draw(strided((m, k2), dtype, kinds)), draw(strided((k2, n), dtype, kinds))]
    if op in ("addmm", "baddbmm"):
        inputs.append(draw(_bias((batch,) if op == "baddbmm" else (), m, n, dtype)))
        scalars = SCALARS if dtype not in INTEGER_DTYPES else \
            tuple(s for s in INTEGER_SCALARS if dtype != "uint8" or s >= 0)
        params = {"alpha": draw(st.sampled_from(scalars)), "beta": draw(st.sampled_from(scalars))}
    return inputs, params


@st.composite
def _out_buffer(draw: st.DrawFn, inputs: list[TensorSpec], dtype: str) -> TensorSpec:
    """An out= buffer of the result's shape, contiguous or at an offset (OUT_KINDS)."""
    return draw(strided((*inputs[0].shape[:-1], inputs[1].shape[-1]), dtype, OUT_KINDS))


@st.composite
def _consumers(draw: st.DrawFn, op: str, value_mode: str) -> tuple[str, ...]:
    """0-3 steps after the op: sometimes first a second product of the inputs concatenated with the
    result (inductor may then write both into one buffer: the flexible-layout freedom), or for mm and
    addmm two more projections of x0 (the QKV shape), then up to two more; an output-adding step
    (return twice, mutate an input) comes last."""
    steps = draw(st.lists(st.sampled_from(LAYOUT_STEPS), max_size=2))
    if op in FLOAT_PRODUCT_OPS and draw(rarely(4)):
        steps.insert(0, draw(st.sampled_from(CAT_MM_STEPS)))
    if op in PROJECTION_OPS and draw(rarely(6)):  # two more projections of x0 (the QKV shape)
        steps.insert(0, "projections")
    if op not in ("int_mm", "scaled_mm") and draw(rarely(4)):  # a bias row (model code: `x @ w + b`), first
        steps.insert(0, "add_bias_row")
    if op in ("int_mm", "scaled_mm", "mm_out_dtype"):
        steps = [s for s in steps if s not in (*ACTIVATIONS, "chain_mm", "relu_")]  # keep integer/fp8 ops simple
    if value_mode == "nonfinite":  # gelu(-inf), silu(-inf) and inf * 0 in y @ y.T have no one right answer
        steps = [s for s in steps if s not in ("gelu", "silu", "chain_mm")]
    if "sum_rows" in steps:  # its result has one dim less: the matrix steps go before it
        steps = [s for s in steps if s != "sum_rows"] + ["sum_rows"]
    if draw(rarely(4)):
        steps.append(draw(st.sampled_from(OUTPUT_STEPS)))
    return tuple(steps)


OUT_DTYPES = {"int_mm": "int32", "mm_out_dtype": "float32", "scaled_mm": "bfloat16"}
"""The result dtype where it is not the operands' (fuzz.run.programs)."""


def _may_serve(backend: str, op: str, device: str, frozen: bool, inputs: list[TensorSpec], capped: bool) -> bool:
    """Whether a template backend serves the case's product, by the oracle's eligibility table
    (oracles/templates.py) read at case level: the selection inductor makes of the case's op (a
    frozen mm, addmm or matmul is a linear, else matmul a bmm when both operands carry the same batch, else an
    mm) and the case's sizes and dtypes. The table's stride rules are read as met: the operands
    inductor selects on need not keep the case's strides, and a set drawn without ATEN should
    still reach every region a template may serve."""
    a, b = inputs[0], inputs[1]
    dtype = a.dtype
    out_dtype = OUT_DTYPES.get(op, dtype)
    m, n, k = a.shape[-2], b.shape[-1], a.shape[-1]
    if frozen and op in ("mm", "addmm", "matmul"):
        name = "packed_linear" if dtype == "float32" else "linear_unary"
    elif op == "matmul":
        same_batch = len(a.shape) >= 3 and len(b.shape) >= 3 and a.shape[:-2] == b.shape[:-2]
        name = "bmm" if same_batch else "mm"
    else:
        name = "mm" if op == "mm_out_dtype" else op
    if backend == "CPP":
        row_major = ((a.shape, contiguous_strides(a.shape)), (b.shape, contiguous_strides(b.shape)))
        return cpp_eligible(name, device, out_dtype, (m, n, k), *row_major)
    if backend == "TRITON":
        k2 = inputs[2].shape[-1] if op == "mm_plus_mm" else None
        return triton_eligible(name, device, out_dtype, (a.dtype, b.dtype), (m, n, k), k2, capped)
    return True


def _servable(config: dict[str, object], op: str, device: str, frozen: bool,
              inputs: list[TensorSpec]) -> dict[str, object]:
    """The config, with ATEN added to a backend set none of whose backends may serve the case
    (such a case is only a rejection: the crash oracle has nothing to test)."""
    backends = config_backends(config)
    unpacked = config.get("cpp.weight_prepack") is False  # CPP needs prepacked weights (use_cpp_gemm_template)
    capped = config.get("test_configs.max_mm_configs") is not None
    if "ATEN" in backends or any(_may_serve(b, op, device, frozen, inputs, capped) for b in backends
                                 if not (b == "CPP" and unpacked)):
        return config
    return {**config, "max_autotune_gemm_backends": join_backends(["ATEN", *backends])}


@st.composite
def cases(draw: st.DrawFn, op: str | None = None, device: str | None = None) -> Case:
    """One Case of `op` (any op the device runs when None) on `device` (CUDA when present, else CPU)."""
    device = device or default_device()
    op = op or draw(st.sampled_from(ops_for(device)))
    # The on/off features first, each drawn whether it applies or not: a fixed place in the draw
    # lets the shrinker turn one off without reshuffling the draws after it.
    every_choice, freeze, tf32, reduce = (draw(rarely(4)), draw(st.booleans()), draw(st.booleans()), draw(rarely(4)))
    spelling = draw(st.sampled_from(SPELLINGS[op]))  # shrinks to the plain torch.<op> call
    warm = draw(rarely(4))  # the user's FX graph cache (frozen graphs too: OSS inductor caches them)
    train = draw(rarely(4))  # a training step where it applies: an unfrozen float product, finite values
    before = draw(rarely(5))  # a prologue where it applies (a float activation)
    form = draw(st.sampled_from(("plain", *WEIGHT_FORMS)))  # a frozen weight's form: plain in a third, shrinks to it
    integer = draw(rarely(8)) and device == "cpu" and op in FLOAT_PRODUCT_OPS  # integer operands (eager: CPU only)
    if op == "int_mm":  # on CUDA, ATen wants N and K multiples of 8 and M > 16; cuBLASLt on the H200
        # (CUDA 13) also refuses M = 24 or 248 and K = 8 (CUBLAS_STATUS_NOT_SUPPORTED): multiples of 16
        dtype = "int8"
    elif op == "scaled_mm":
        dtype = "float8_e4m3fn"
    elif op == "mm_out_dtype":
        dtype = draw(st.sampled_from(("float16", "bfloat16")))
    elif integer:
        dtype = draw(st.sampled_from(INTEGER_DTYPES))
    else:
        dtype = draw(st.sampled_from(FLOAT_DTYPES[device]))
    on_cuda_int = op == "int_mm" and device == "cuda"
    multiple = 16 if op == "scaled_mm" or on_cuda_int else 1
    min_m = 32 if on_cuda_int else 1
    m, n, k = draw(matmul_dims(MAX_DIM[device], MAX_ELEMENTS[device], multiple_of=multiple, min_m=min_m,
                               allow_zero=op not in ("int_mm", "scaled_mm"),
                               m_multiple_of=multiple if on_cuda_int else 1))
    if integer:  # an int8/uint8 dot product of K terms stays inside the dtype
        k = min(k, 2 ** (INTEGER_BITS[dtype] - INTEGER_HEADROOM_BITS))
    batch = draw(dims(9))
    value_modes = ("normal", "exact_int", "sparse") + (() if op == "scaled_mm" else ("large",)) \
        + (() if op in ("int_mm", "scaled_mm") else ("nonfinite", "tiny", "mixed"))
    if train and op in FLOAT_PRODUCT_OPS:  # a training case: finite values (the same first three, so it shrinks alike)
        value_modes = BACKWARD_VALUE_MODES
    if integer:
        value_modes = INTEGER_VALUE_MODES
    value_mode = draw(st.sampled_from(value_modes))
    consumers = tuple(c for c in draw(_consumers(op, value_mode))  # row 0 of the result, or of x1, must exist
                      if (m or c != "view_row") and (k or c != "add_bias_row"))
    prologue = tuple(draw(st.lists(st.sampled_from(PROLOGUE_STEPS), min_size=1, max_size=2))) \
        if before and op in PROLOGUE_OPS and "mutate_input" not in consumers else ()
    if integer:  # uint8: -x wraps
        consumers = tuple(c for c in consumers if c in INTEGER_STEPS and (dtype != "uint8" or c != "projections"))
        prologue = tuple(p for p in prologue if dtype != "uint8" or p != "neg")
    if spelling == "out":  # an in-place step updates the buffer only while the result is the buffer itself
        consumers = consumers[:1] + tuple(c for c in consumers[1:] if c not in RESULT_MUTATING_STEPS)
    backward = train and op in FLOAT_PRODUCT_OPS and value_mode in BACKWARD_VALUE_MODES and spelling != "out" \
        and not integer
    if backward:  # the multilinear steps (fuzz.run.gradients bounds their gradients)
        consumers = tuple(c for c in consumers if c in BACKWARD_STEPS)
    frozen = device == "cpu" and "mutate_input" not in consumers and freeze and not backward \
        and spelling != "out"  # an out= buffer is the caller's argument
    form = _weight_form(form, op, frozen, dtype)
    if form in INT8_FORMS:  # the woq pattern's spelling; the steps that read x1 as a float (K, N) go
        spelling, consumers = "call", tuple(c for c in consumers if c not in WEIGHT_READING_STEPS)
    kinds: tuple[str, ...] = STRIDE_KINDS if "mutate_input" not in consumers \
        else ("contiguous", "transposed", "padded", "offset")
    if on_cuda_int or op == "scaled_mm":  # cuBLASLt: row-major, 16-byte aligned
        kinds = ("contiguous",)
    inputs, params = draw(_operands(op, device, dtype, m, n, k, batch, kinds))
    if op == "matmul" and len(inputs[1].shape) > 2:  # a frozen matmul is a linear of a batch of sequences
        frozen, form = False, "plain"
    if form in INT8_FORMS:
        inputs[1] = dataclasses.replace(inputs[1], dtype="int8")
    if op == "addmm" and not inputs[2].shape:  # the projections' other biases are flips of this one
        consumers = tuple(c for c in consumers if c != "projections")
    if spelling not in SCALAR_SPELLINGS:  # `a @ b + bias`, F.linear: no scalars
        params = dict.fromkeys(params, 1.0)
    if spelling == "out":  # before the dynamic draw: a marked or resized family resizes the buffer too
        inputs.append(draw(_out_buffer(inputs, dtype)))
    sizes = {"M": m, "N": n, "K": k, "B": batch}
    dynamic, marks, second = draw(dynamic_shapes(op, inputs, sizes, MAX_DIM[device], kinds, frozen, multiple, min_m))
    shared: tuple[int, ...] = ()
    sharable = range(1 if frozen else 0, INPUT_COUNT[op])  # frozen: weights may share one storage (fused weights)
    share = draw(rarely(6))  # drawn whether it applies or not: frozen (fewer sharable inputs) must not shrink shorter
    if share and op != "scaled_mm" and "mutate_input" not in consumers and len(sharable) > 1:
        shared = tuple(draw(st.lists(st.sampled_from(sharable), min_size=2, max_size=len(sharable), unique=True)))
    half = dtype in ("float16", "bfloat16") and op != "mm_out_dtype"
    config = draw(autotune_configs(device, frozen))
    if second:  # the recompile retraces the module, whose discarded parameters inductor refuses (by design)
        config.pop("freezing_discard_parameters", None)
    config = _servable(config, op, device, frozen, inputs)
    return Case.make(
        op=op, inputs=tuple(inputs), device=device, config=config, params=params,
        value_mode=value_mode, seed=draw(st.integers(0, 2**16)),
        frozen_weights=frozen, tf32=device == "cuda" and dtype == "float32" and tf32 and not backward,
        reduced_precision=device == "cuda" and half and reduce and not backward,
        consumers=consumers, dynamic=dynamic, mark_dynamic=marks, second_call=second,
        every_choice=every_choice, shared_storage=shared, spelling=spelling, warm_cache=warm,
        weight_form=form, backward=backward, prologue=_upcast_first(prologue, dtype == "float32" and not backward
                                                                     and 0 not in shared),
    )


def _upcast_first(prologue: tuple[str, ...], upcast: bool) -> tuple[str, ...]:
    """The drawn prologue with its first upcast moved to the front where one applies (a float32 op, no
    training case, x0 in a storage of its own), and without the other upcasts."""
    upcasts = [p for p in prologue if p in UPCASTS]
    return (*upcasts[:1 if upcast else 0], *(p for p in prologue if p not in UPCASTS))


def _weight_form(drawn: str, op: str, frozen: bool, dtype: str) -> str:
    """The drawn weight form where it applies (int8: an mm; fused: a float product; cast: one in
    float16/bfloat16), else plain."""
    if not frozen or (drawn in INT8_FORMS and (op != "mm" or dtype in INTEGER_DTYPES)) \
            or (drawn in FUSED_THIRD and op not in FLOAT_PRODUCT_OPS) \
            or (drawn == "cast" and (op not in FLOAT_PRODUCT_OPS or dtype not in CAST_DTYPES)):
        return "plain"
    return drawn


def stride_kind(t: TensorSpec) -> str:
    """Which STRIDE_KINDS layout a generated operand has (read back from its strides)."""
    if len(t.shape) < 2:
        return "vector"
    rows, cols = t.stride[-2:]
    if t.shape[-2] > 1 and rows == 0:
        return "expanded"
    if t.shape[-1] > 1 and cols == 2:
        return "nondense"
    if t.shape[-2] > 1 and t.shape[-1] > 1 and cols != 1:
        return "transposed"
    if len(t.shape) == 3 and t.shape[0] > 1 and t.stride[0] < rows:
        return "batch_inner"
    return "offset" if t.offset else "dense"


def case_features(case: Case) -> set[str]:
    """Labels of the regions a case falls in (for statistics and the distribution test)."""
    out = {f"op:{case.op}", f"value:{case.value_mode}", f"every_choice:{case.every_choice}",
           f"spelling:{case.op}:{case.spelling}",
           f"backends:{case.config_dict['max_autotune_gemm_backends']}"}
    out |= {f"dtype:{t.dtype}" for t in case.inputs} | {f"consumer:{c}" for c in case.consumers}
    out |= {f"prologue:{p}" for p in case.prologue}
    out |= {f"stride:{stride_kind(t)}" for t in case.inputs} | {f"knob:{k}" for k in case.config_dict}
    out |= {"zero-size"} if any(0 in t.shape for t in case.inputs) else set()
    out |= {"dynamic"} if case.dynamic else set()
    out |= {f"mark_dynamic:{dim_roles(case.op, i, len(case.inputs[i].shape))[d]}" for i, d in case.mark_dynamic}
    out |= {f"second_call:{role}" for i, (t, u) in enumerate(zip(case.inputs, case.second_call, strict=False))
            for role, a, b in zip(dim_roles(case.op, i, len(t.shape)), t.shape, u.shape, strict=False) if a != b}
    out |= {"shared_storage"} if len(case.shared_storage) > 1 else set()
    out |= {"frozen", f"frozen-op:{case.op}"} if case.frozen_weights else set()
    out |= {f"weight_form:{case.weight_form}"} if case.weight_form != "plain" else set()
    out |= {"warm_cache"} if case.warm_cache else set()
    out |= {"backward", f"backward-op:{case.op}"} if case.backward else set()
    if case.integer_product():
        out |= {f"integer-op:{case.op}", f"integer-value:{case.value_mode}"}
        out |= {"integer-frozen"} if case.frozen_weights else set()
    if case.dynamic or case.mark_dynamic or case.second_call:
        out |= {f"dynamic-op:{case.op}"} | ({"frozen-dynamic"} if case.frozen_weights else set())
    out |= {"frozen-shared"} if case.frozen_weights and len(case.shared_storage) > 1 else set()
    autotuned = case.config_dict.get("max_autotune") or case.config_dict.get("max_autotune_gemm")
    out |= set() if autotuned else {"no_max_autotune"}
    out |= {"tf32"} if case.tf32 else set()
    out |= {"reduced_precision"} if case.reduced_precision else set()
    return out
