"""Recorded observations and the violations oracles derive from them (pure data, no inductor)."""

from __future__ import annotations

import dataclasses
from typing import Any

from oracles.signature import Signature
from strategies.case import Case

UNSOUND, WRONG_RESULT, CRASH, MISSED_OPTIMIZATION, VACUOUS, REFERENCE_DIFFERS = (
    "unsound", "wrong result", "crash", "missed optimization", "vacuous", "reference differs")
"""Severities. REFERENCE_DIFFERS: eager and compiled agree and the float64 reference differs, so
the deviation is not inductor's (an ATen kernel's, or what the reference does not model): never new."""


@dataclasses.dataclass(frozen=True)
class ChoiceRecord:
    """One kernel choice as inductor offered it: extern or which template, and its output layout."""

    kind: str  # "extern" or "template"
    template: str  # template uid (e.g. "triton::mm", "aten::mm") or the caller's class name
    template_class: str
    layout: str  # layout class name, e.g. "FixedLayout" / "FlexibleLayout"
    src_hash: str | None
    has_src_hash: bool  # False when the template object has no src_hash attribute at all
    description: str = ""  # the choice's config (block sizes, warps, ...) as inductor describes it

    @property
    def flexible(self) -> bool:
        return self.layout == "FlexibleLayout"

    @property
    def family(self) -> str:
        """Stable name for signatures: the template uid, else its class (e.g. CppTemplateCaller)."""
        return self.template if "::" in self.template else self.template_class


@dataclasses.dataclass(frozen=True)
class Gate:
    """The inputs of inductor's fixed-vs-flexible layout decision, read when the choices were made."""

    max_autotune: bool
    max_autotune_gemm: bool
    allow_flexible_layouts: bool
    backends: tuple[str, ...]
    device_type: str
    origami_rocm: bool
    max_mm_configs: int | None = None  # config.test_configs.max_mm_configs: a cap on Triton configs
    cpp_weight_prepack: bool = True  # config.cpp.weight_prepack: off, no CPP GEMM template


@dataclasses.dataclass(frozen=True)
class Operand:
    """One input of an autotune selection as inductor saw it: sizes and strides (None where
    symbolic or not yet decided) and dtype."""

    size: tuple[int | None, ...]
    stride: tuple[int | None, ...] | None
    dtype: str


EXTERN_CANDIDATE = "ExternKernelChoice"
"""The class name `SelectionEvent.unbuilt` gives every extern candidate (subclasses included)."""


@dataclasses.dataclass(frozen=True)
class SelectionEvent:
    """`source` is "template_configs" (one get_template_configs call) or "autotune" (every choice
    that reached autotune_select_algorithm, templates added outside get_template_configs too)."""

    source: str
    op_name: str
    choices: tuple[ChoiceRecord, ...]
    gate: Gate | None = None
    graph: int = 0  # which graph of the compile (a later call may recompile)
    operands: tuple[Operand, ...] = ()  # autotune selections: the inputs of the op
    out_dtype: str = ""  # autotune selections: the result's dtype
    device: str = ""  # autotune selections: the device type of the result
    failed: tuple[tuple[int, str], ...] = ()  # (choice index, "precompile" or "benchmark") inductor dropped
    unbuilt: tuple[str, ...] = ()  # template_configs: the class of each judged candidate that built no choice


@dataclasses.dataclass(frozen=True)
class LoweredNode:
    """One mm-family aten node inductor lowered: did lowering select among kernel choices, and
    what IR did it return (Pointwise/Reduction: decomposed, no template involved)."""

    op: str
    selected: bool
    ir: str  # the IR classes under the lowered value, outermost first, e.g. "StorageBox>ComputedBuffer>Reduction"

    @property
    def decomposed(self) -> bool:
        return not self.selected and any(kind in ("Pointwise", "Reduction") for kind in self.ir.split(">"))


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where an mm-family result ended up once inductor scheduled the graph: the buffer it was
    selected into, the buffer holding it at the end (another one when a later pass, e.g. a cat,
    made the kernel write into a slice of it), its strides and offset there, and whether its
    selection offered a FlexibleLayout (the freedom such passes use)."""

    op: str
    buffer: str
    storage: str
    stride: tuple[int, ...]
    offset: int
    flexible: bool
    contiguous: bool  # the strides a fresh contiguous tensor of its size would have

    @property
    def changed(self) -> bool:
        """A flexible layout that a later pass changed (moved into another buffer, restrided)."""
        return self.flexible and (self.storage != self.buffer or self.offset != 0 or not self.contiguous)


@dataclasses.dataclass(frozen=True)
class Failure:
    """An exception from eager or compiled execution."""

    type: str
    message: str
    frame: str  # innermost torch/_inductor frame, "file:function", or "" when none
    no_valid_choices: str = ""  # NoValidChoicesError: "no-choices", "all-failed-to-compile" or "all-failed-to-run"

    @property
    def beyond_hardware(self) -> bool:
        """The kernel needs more of a resource (shared memory, registers) than this GPU has: Triton's
        OutOfResources, which autotuning skips by design."""
        return self.type == "OutOfResources" or "out of resource" in self.message.lower()


@dataclasses.dataclass(frozen=True)
class TensorMeta:
    """How an output tensor sits in memory, read on its device before any copy."""

    stride: tuple[int, ...]
    offset: int
    is_view: bool  # a view of another tensor: inductor promises only its stride order
    aliases: tuple[str, ...] = ()  # the other outputs ("out1") and inputs ("in0") sharing its storage


@dataclasses.dataclass
class OutputCheck:
    """One output of one call: compiled vs eager vs the float64 reference. Tensors on the CPU."""

    label: str  # e.g. "call0/out0", or "call0/out0 @triton::mm" for a single-choice compile
    eager: Any
    compiled: Any
    reference: Any  # float64
    bound: Any  # float64: the error a correct kernel's output may carry, every rounding included
    exact: bool  # every rounded quantity is representable: a correct kernel is bit-exact
    choice: ChoiceRecord | None = None  # set for single-choice compiles
    eager_meta: TensorMeta | None = None
    compiled_meta: TensorMeta | None = None
    gradient: bool = False  # an input's .grad after a training case's backward pass


@dataclasses.dataclass
class Observation:
    """Everything one case produced."""

    case: Case
    selections: list[SelectionEvent] = dataclasses.field(default_factory=list)
    post_grad_targets: list[str] | None = None  # None: inductor never ran post-grad passes
    lowered: list[LoweredNode] = dataclasses.field(default_factory=list)
    results: list[OutputCheck] = dataclasses.field(default_factory=list)
    eager_failure: Failure | None = None
    compile_failure: Failure | None = None
    choice_failures: list[tuple[ChoiceRecord, Failure]] = dataclasses.field(default_factory=list)
    unisolated: list[ChoiceRecord] = dataclasses.field(default_factory=list)  # single-choice compiles that ran others
    unavailable: list[tuple[ChoiceRecord, Failure]] = dataclasses.field(default_factory=list)  # beyond this GPU
    warm_cache_hit: bool | None = None  # a warm_cache case: did its second compile load from the FX graph cache
    placements: list[Placement] = dataclasses.field(default_factory=list)  # of the autotuned compile's results
    earlier_hashes: dict[str, str | None] = dataclasses.field(default_factory=dict)
    catalogue: dict[str, dict[str, str | None]] = dataclasses.field(default_factory=dict)
    torch_version: str = ""
    timings: dict[str, float] = dataclasses.field(default_factory=dict)  # seconds per phase (fuzz/probe/timing.py)

    @property
    def choices(self) -> list[ChoiceRecord]:
        return [c for s in self.selections for c in s.choices]


@dataclasses.dataclass(frozen=True)
class Violation:
    oracle: str
    severity: str
    signature: str  # short, stable across runs: used to deduplicate findings
    message: str
    output: str = ""  # the OutputCheck.label a numerics violation judged ("" for the others)

    @property
    def parsed(self) -> Signature:
        return Signature.parse(self.signature)
