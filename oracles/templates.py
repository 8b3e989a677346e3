"""Template presence: where the backend set asks for a template backend and an autotune selection
lies inside that template's documented eligibility, the selection must offer such a template,
and inductor must not drop a choice after a failed compile or benchmark. The same table decides
whether a selection that got no choice at all could have been served (else it is a config limit).

The table is this module's own reading of inductor's lowerings (kernel/mm.py, kernel/bmm.py,
kernel/mm_plus_mm.py, utils.py `use_triton_template` / `use_cpp_gemm_template` /
`use_cpp_bmm_template`, template_heuristics/) on torch 2.11 and 2.13, which agree on everything
below but one (mm_plus_mm under a cap on Triton configs, where the table takes the stricter 2.11).
It is conservative: outside it nothing is required, inside it a template must show up.
"""

from __future__ import annotations

from oracles.model import CRASH, MISSED_OPTIMIZATION, ChoiceRecord, Observation, SelectionEvent, Violation
from strategies.case import contiguous_strides

HALF_AND_FLOAT = ("float16", "bfloat16", "float32")
DECOMPOSE_K_THRESHOLD = 32  # config.triton.decompose_k_threshold, both versions
TRITON_OUT_DTYPES = {"mm": HALF_AND_FLOAT, "addmm": HALF_AND_FLOAT, "bmm": HALF_AND_FLOAT, "baddbmm": HALF_AND_FLOAT,
                     "int_mm": ("int32",), "scaled_mm": HALF_AND_FLOAT, "mm_plus_mm": HALF_AND_FLOAT}
MATRICES = {"mm": (0, 1), "addmm": (1, 2), "bmm": (0, 1), "baddbmm": (1, 2), "int_mm": (0, 1), "scaled_mm": (0, 1),
            "mm_plus_mm": (0, 1), "packed_linear": (0, 2), "linear_unary": (0, 1)}
"""Positions of (A, B) among a selection's inputs (addmm-style ops put the bias first; the
frozen-weight linears on the CPU, float32 `packed_linear` and half `linear_unary`, hold the
weight as (N, K))."""
LINEARS = ("packed_linear", "linear_unary")


def matrix_sizes(event: SelectionEvent) -> tuple[int | None, int | None, int | None] | None:
    """(M, N, K) of the selection's product, None where symbolic; None for an op not in the table."""
    if event.op_name not in MATRICES or len(event.operands) <= max(MATRICES[event.op_name]):
        return None
    a, b = (event.operands[i].size for i in MATRICES[event.op_name])
    if len(a) < 2 or len(b) < 2:
        return None
    n = b[-2] if event.op_name in LINEARS else b[-1]
    return a[-2], n, a[-1]


def _positive(*sizes: int | None) -> bool:
    return all(s is not None and s > 0 for s in sizes)


def triton_eligible(op_name: str, device: str, out_dtype: str, operand_dtypes: tuple[str, ...],
                    mnk: tuple[int | None, int | None, int | None], k2: int | None, capped: bool) -> bool:
    """The table's Triton row: a selection of `op_name` with product sizes `mnk` (None: symbolic),
    mm_plus_mm's second K `k2`, under a cap on Triton configs or not, gets a Triton template."""
    m, n, k = mnk
    if device != "cuda" or out_dtype not in TRITON_OUT_DTYPES.get(op_name, ()) or not _positive(m, n, k):
        return False
    assert m is not None and n is not None and k is not None
    if op_name == "mm":  # mm with out_dtype gets no template; a K this much larger than M and N
        if any(d != out_dtype for d in operand_dtypes):  # leaves only decompose-k and ATen
            return False
        return not (k >= 2 * DECOMPOSE_K_THRESHOLD * m and k >= 2 * DECOMPOSE_K_THRESHOLD * n)
    if op_name == "scaled_mm":
        return k > 16
    if op_name == "mm_plus_mm":  # configs need BLOCK_K < K for both products; the smallest is 16,
        # but 2.11 caps the list (its first configs have BLOCK_K 32) before it drops those (H200 campaign)
        floor = 32 if capped else 16
        return k > floor and k2 is not None and k2 > floor
    return True


def _triton_must_offer(event: SelectionEvent, mnk: tuple[int | None, int | None, int | None]) -> bool:
    k2 = event.operands[2].size[-1] if event.op_name == "mm_plus_mm" and len(event.operands) > 2 else None
    capped = event.gate is not None and event.gate.max_mm_configs is not None
    return triton_eligible(event.op_name, event.device, event.out_dtype, tuple(o.dtype for o in event.operands),
                           mnk, k2, capped)


def contiguous(size: tuple[int | None, ...], stride: tuple[int | None, ...] | None) -> bool:
    """Row-major (size-1 dims aside; a symbolic size counts as 1); unknown strides are not."""
    expected = contiguous_strides(tuple(n or 1 for n in size))
    return stride is not None and all(s == e for s, e, d in zip(stride, expected, size, strict=True) if d != 1)


def cpp_eligible(op_name: str, device: str, out_dtype: str, mnk: tuple[int | None, int | None, int | None],
                 a: tuple[tuple[int | None, ...], tuple[int | None, ...] | None],
                 w: tuple[tuple[int | None, ...], tuple[int | None, ...] | None]) -> bool:
    """The table's CPP row: a selection of `op_name` with product sizes `mnk` whose A and B (the
    weight, for the frozen linears) have these (size, stride) gets a CPP GEMM template."""
    if device != "cpu" or out_dtype not in HALF_AND_FLOAT or not _positive(*mnk):
        return False
    if op_name in LINEARS:  # a frozen weight: the CPP GEMM template, for a weight with a unit stride
        # (measured on 2.13: a (N, K) weight strided (2, 84) gets none)
        return a[1] is not None and a[1][-1] == 1 and w[1] is not None and 1 in w[1]
    return op_name == "bmm" and contiguous(*a)


def _cpp_must_offer(event: SelectionEvent, mnk: tuple[int | None, int | None, int | None]) -> bool:
    a, w = (event.operands[i] for i in MATRICES[event.op_name])
    return cpp_eligible(event.op_name, event.device, event.out_dtype, mnk, (a.size, a.stride), (w.size, w.stride))


def must_offer(event: SelectionEvent) -> tuple[str, ...]:
    """The backends of the case's set that, by the table, must offer this selection a choice."""
    gate = event.gate
    if gate is None:
        return ()
    autotuned = gate.max_autotune or gate.max_autotune_gemm
    out = ["ATEN"] if "ATEN" in gate.backends or not autotuned else []
    mnk = matrix_sizes(event)
    if autotuned and mnk is not None:
        if "TRITON" in gate.backends and _triton_must_offer(event, mnk):
            out.append("TRITON")
        if "CPP" in gate.backends and gate.cpp_weight_prepack and _cpp_must_offer(event, mnk):
            out.append("CPP")
    return tuple(out)


def _offers(backend: str, choice: ChoiceRecord) -> bool:
    if backend == "ATEN":
        return choice.kind == "extern"
    if backend == "TRITON":
        return choice.template.startswith("triton::")
    return choice.template_class == "CppTemplateCaller"


def check(obs: Observation) -> list[Violation]:
    out = []
    for event in (e for e in obs.selections if e.source == "autotune"):
        for backend in must_offer(event):
            if event.choices and not any(_offers(backend, c) for c in event.choices):
                out.append(Violation(
                    "template_presence", MISSED_OPTIMIZATION, f"missing:{event.op_name}:{backend}",
                    f"{event.op_name} ({_describe(event)}): the backend set asks for {backend} and the selection is "
                    f"inside its eligibility, yet none of its {len(event.choices)} choice(s) is a {backend} choice"))
        for index, stage in event.failed:
            choice = event.choices[index]
            out.append(Violation(
                "template_presence", CRASH, f"dropped:{event.op_name}@{choice.family}:{stage}",
                f"{event.op_name} ({_describe(event)}): inductor dropped {choice.template} [{choice.description}] "
                f"after it failed to {'compile' if stage == 'precompile' else 'run'} while autotuning"))
    return out


def unservable(obs: Observation) -> bool:
    """The compile failed because a selection got no choice at all, and no backend of the case's
    set could have served it: a config limit, not a bug."""
    failure = obs.compile_failure
    if failure is None or failure.no_valid_choices != "no-choices":
        return False
    empty = [e for e in obs.selections if e.source == "autotune" and not e.choices]
    return bool(empty) and not must_offer(empty[-1])


def _describe(event: SelectionEvent) -> str:
    sizes = " x ".join(str(list(o.size)) for o in event.operands)
    return f"{sizes} -> {event.out_dtype}"
