"""Recorded observations and the violations oracles derive from them (pure data, no inductor)."""

from __future__ import annotations

import dataclasses
from typing import Any

from strategies.case import Case

UNSOUND, WRONG_RESULT, CRASH, MISSED_OPTIMIZATION, VACUOUS = (
    "unsound", "wrong result", "crash", "missed optimization", "vacuous")


@dataclasses.dataclass(frozen=True)
class ChoiceRecord:
    """One kernel choice as inductor offered it: extern or which template, and its output layout."""

    kind: str  # "extern" or "template"
    template: str  # template uid (e.g. "triton::mm", "aten::mm") or the caller's class name
    template_class: str
    layout: str  # layout class name, e.g. "FixedLayout" / "FlexibleLayout"
    src_hash: str | None
    has_src_hash: bool  # False when the template object has no src_hash attribute at all

    @property
    def flexible(self) -> bool:
        return self.layout == "FlexibleLayout"


@dataclasses.dataclass(frozen=True)
class Gate:
    """The inputs of inductor's fixed-vs-flexible layout decision, read when the choices were made."""

    max_autotune: bool
    max_autotune_gemm: bool
    allow_flexible_layouts: bool
    backends: tuple[str, ...]
    device_type: str
    origami_rocm: bool


@dataclasses.dataclass(frozen=True)
class SelectionEvent:
    """`source` is "template_configs" (one get_template_configs call) or "autotune" (every choice
    that reached autotune_select_algorithm, templates added outside get_template_configs too)."""

    source: str
    op_name: str
    choices: tuple[ChoiceRecord, ...]
    gate: Gate | None = None


@dataclasses.dataclass(frozen=True)
class Failure:
    """An exception from eager or compiled execution."""

    type: str
    message: str
    frame: str  # innermost torch/_inductor frame, "file:function", or "" when none
    config_limit: bool = False  # inductor said no backend can serve the shape (NoValidChoicesError)


@dataclasses.dataclass
class Observation:
    """Everything one case produced. Tensors are on the CPU; `reference` is float64."""

    case: Case
    selections: list[SelectionEvent] = dataclasses.field(default_factory=list)
    post_grad_targets: list[str] | None = None  # None: inductor never ran post-grad passes
    program_ops: tuple[str, ...] = ()  # mm-family aten ops the program calls in eager mode
    eager: Any = None
    compiled: Any = None
    reference: Any = None  # float64 result
    magnitude: Any = None  # float64 sum_k |a_ik b_kj| (+ |beta * bias|): scale of rounding error
    reduction_size: int = 0
    exact: bool = False  # inputs chosen so every partial sum is exact in the output dtype
    tf32: bool = False
    eager_failure: Failure | None = None
    compile_failure: Failure | None = None
    earlier_hashes: dict[str, str | None] = dataclasses.field(default_factory=dict)
    catalogue: dict[str, dict[str, str | None]] = dataclasses.field(default_factory=dict)
    torch_version: str = ""

    @property
    def choices(self) -> list[ChoiceRecord]:
        return [c for s in self.selections for c in s.choices]


@dataclasses.dataclass(frozen=True)
class Violation:
    oracle: str
    severity: str
    signature: str  # short, stable across runs: used to deduplicate findings
    message: str
