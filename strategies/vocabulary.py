"""The Case vocabulary: the ops, steps, spellings, weight forms, dtypes and value modes a Case
may name (fuzz.run defines what each computes; strategies.case validates their combinations)."""

from __future__ import annotations

__all__ = [
    "ACTIVATIONS", "BACKWARD_STEPS", "BACKWARD_VALUE_MODES", "CAST_DTYPES", "CAST_FROM", "CAT_MM_STEPS",
    "CONSUMERS", "DEVICES", "DTYPES", "FLOAT_PRODUCT_OPS", "FUSED_THIRD", "INPUT_COUNT", "INT8_FORMS",
    "INTEGER_BITS", "INTEGER_DTYPES", "INTEGER_HEADROOM_BITS", "INTEGER_STEPS", "INTEGER_VALUE_MODES", "OPS",
    "PARAM_KEYS", "PROJECTION_OPS", "PROLOGUE_OPS", "PROLOGUE_STEPS", "RESULT_MUTATING_STEPS", "SCALAR_SPELLINGS",
    "SPELLINGS", "UPCASTS", "VALUE_MODES", "WEIGHT_FORMS", "WEIGHT_READING_STEPS"
]

INPUT_COUNT = {"mm": 2, "addmm": 3, "bmm": 2, "baddbmm": 3, "matmul": 2, "mm_out_dtype": 2, "int_mm": 2,
               "scaled_mm": 4, "mm_plus_mm": 4}
OPS = tuple(INPUT_COUNT)
"""mm-family ops a Case may name (fuzz.run.programs defines what each computes)."""
FLOAT_PRODUCT_OPS = ("mm", "addmm", "bmm", "baddbmm", "matmul", "mm_plus_mm")
"""Ops whose first two inputs are the operands of `x0 @ x1` (what the cat_mm steps multiply again):
float, or on the CPU integer (INTEGER_DTYPES)."""
PARAM_KEYS = {op: (("alpha", "beta") if op in ("addmm", "baddbmm") else ()) for op in OPS}
CONSUMERS = ("relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "softmax", "add_bias_row", "add", "to_float32",
             "transpose_contiguous", "slice_step", "narrow", "cat_rows", "cat_cols", "cat_mm_rows", "cat_mm_cols",
             "sum_rows", "chain_mm", "view_row", "return_twice", "mutate_input", "projections")
"""Steps applied to the op's result (fuzz.run.steps defines each)."""
CAT_MM_STEPS = ("cat_mm_rows", "cat_mm_cols")
"""Steps that multiply the op's inputs again (half of x0's rows, or of x1's columns) beside the result."""
UPCASTS = {"upcast_bfloat16": "bfloat16", "upcast_float16": "float16"}
"""Prologue steps that cast x0 up to float32 (`x0.float()`, exact): the caller holds x0 in this
narrower dtype (`Case.held`), as a model with low-precision activations and a float32 head does;
the upcast is what a Triton template's prologue fusion fuses into its loads."""
PROLOGUE_STEPS = ("relu", "neg", "transposed_copy", *UPCASTS)
"""Steps applied to x0 before the op (fuzz.run.steps defines each; all exact): the op's activation
then is a computed tensor, whose layout inductor chooses (a Triton template may fuse the step into
its loads: prologue fusion), not a graph input's. An upcast comes first, before float32 ops."""
PROLOGUE_OPS = ("mm", "addmm", "bmm", "baddbmm", "matmul", "mm_out_dtype", "mm_plus_mm")
"""Ops a prologue may precede: float activations (negating an int8 -128 wraps)."""
PROJECTION_OPS = ("mm", "addmm")
"""Ops the "projections" step applies again (two more projections of x0: the QKV shape)."""

SPELLINGS = dict.fromkeys(OPS, ("call",)) | {
    "mm": ("call", "operator", "method", "linear", "einsum", "out"),
    "addmm": ("call", "operator", "linear", "out"),
    "bmm": ("call", "operator", "method", "einsum", "out"),
    "baddbmm": ("call", "operator", "out"),
    "matmul": ("call", "operator", "method"),
}
"""How a program may spell its op, as users write it ("call": torch.<op>(...); fuzz.run.programs
renders each). "out": the call writes into a buffer the caller passes, the last input (the result's
shape, contiguous: dynamo runs other out= calls eagerly), returned after the program's outputs.
For addmm/baddbmm every other spelling but "call" is `bias + a @ b`: alpha = beta = 1."""
SCALAR_SPELLINGS = ("call", "out")
"""Spellings that pass alpha and beta."""

WEIGHT_FORMS = ("plain", "fused", "fused_first", "cast", "int8", "int8_tensor", "int8_single")
"""How a frozen weight (input 1) is held (fuzz.run.programs renders each): "plain", the parameter
itself; "fused" / "fused_first", the columns n:2n / 0:n of a fused parameter three times as wide
(a qkv weight's k / q: a view at an offset, or at the storage's start); "cast", float16/bfloat16 math
on float32 tensors: the module holds its weights in float32 and gets a float32 activation, and
casts each to the case's dtype in forward (`x.half() @ w.half()`: what CPU autocast does);
"int8*", weight-only int8: an int8 buffer stored (N, K) as nn.Linear's and a scale buffer in the
activation's dtype, per output channel (N,), one 0-d scale, or one (1,) scale, the program
`(x0 @ w.t().to(x0.dtype)) * scale` (the spelling inductor's woq pattern matches)."""
INT8_FORMS = ("int8", "int8_tensor", "int8_single")
FUSED_THIRD = {"fused": 1, "fused_first": 0}
"""Which third of its fused parameter a fused weight form is."""
CAST_DTYPES = ("float16", "bfloat16")
"""The dtypes the "cast" form computes in (from CAST_FROM)."""
CAST_FROM = "float32"
RESULT_MUTATING_STEPS = ("relu_",)
"""Steps that update the op's result in place: with an out= buffer, only as the first step (a later
one may update a view or a copy of it)."""
WEIGHT_READING_STEPS = ("add_bias_row", "cat_mm_rows", "cat_mm_cols", "projections")
"""Steps that read x1 as the float (K, N) operand (fuzz.run.steps): not with an int8 weight."""
BACKWARD_STEPS = ("relu", "relu_", "add_bias_row", "add", "to_float32", "transpose_contiguous", "slice_step", "narrow",
                  "cat_rows", "cat_cols", "cat_mm_rows", "cat_mm_cols", "sum_rows", "chain_mm", "view_row",
                  "return_twice")
"""Steps a training case may take: the multilinear ones, whose gradient's error a correct kernel
bounds by the magnitude program's gradient (fuzz.run.gradients), and relu (its gradient is judged
where the forward is exact, so its mask is too); not the smooth activations, the input mutation (a
leaf that requires grad) or the projections (whose magnitude program takes |.| of its weights)."""
BACKWARD_VALUE_MODES = ("normal", "exact_int", "sparse")
"""Value modes of a training case: finite, away from the ends of the dtype (no overflow or underflow
in the backward's own products)."""

INTEGER_DTYPES = ("int64", "int32", "int16", "int8", "uint8")
"""Integer dtypes of a float product's operands (a CPU case: eager runs integer mm/bmm there only):
index arithmetic, counts, one-hot and adjacency matrices, integer weights a model freezes."""
ACTIVATIONS = ("gelu", "silu", "sigmoid", "tanh", "softmax")
"""The smooth steps: none for integer or fp8 results (eager's sigmoid/tanh/softmax of an integer
tensor is a float one, its gelu/silu raise)."""
INTEGER_STEPS = tuple(c for c in CONSUMERS if c not in (*ACTIVATIONS, "chain_mm"))
"""Steps an integer product may take: no activation (eager's sigmoid/tanh of an integer tensor is a
float one, its gelu/silu raise), no y @ y.T (its magnitude squares the result's). A uint8 product
also takes no projections (their biases are negated) and no negating prologue."""
INTEGER_BITS = {"int64": 44, "int32": 31, "int16": 15, "int8": 7, "uint8": 8}
"""Value bits of an integer result (int64: 2**44, so that a float64 reference stays exact through
sum_rows over N <= 300 < 2**9 of them)."""
INTEGER_HEADROOM_BITS = 4
"""A product of integers is at most 2**(bits - 4) in size, for any K and values (fuzz.run.values):
a factor 2 for the addmm scalars, 4 for two doubling steps, and the bias rows. So an int8 or uint8
product has K <= 2**(bits - 4)."""
INTEGER_VALUE_MODES = ("exact_int", "large")
"""Value modes of an integer product: small integers, or the largest the dtype holds through the
op and its steps without overflow (fuzz.run.values.integer_range)."""

DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", *INTEGER_DTYPES)
VALUE_MODES = ("exact_int", "normal", "large", "sparse", "nonfinite", "tiny", "mixed")
DEVICES = ("cpu", "cuda")
