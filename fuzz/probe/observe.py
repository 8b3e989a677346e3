"""The selection observer, in `fuzz.probe` (the only package that touches inductor internals).

It records, through inductor's own extension points, every template-selection call while a case
compiles: the choices handler's class (`get_template_configs` wrapped, in every thread),
`select_algorithm.add_preprocessing_fn` (every choice that reaches autotuning) and
`config.post_grad_custom_post_pass` (which mm-family nodes reached lowering). Version
differences are handled here; a missing hook raises ObserverUnavailable with one clear line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any
from unittest import mock

import torch

from fuzz.probe.inductor import inductor_config_keys
from oracles.model import EXTERN_CANDIDATE, ChoiceRecord, Gate, LoweredNode, Operand, Placement, SelectionEvent
from strategies.backends import parse_backends
from strategies.case import contiguous_strides

MM_FAMILY_TARGETS = frozenset({
    "aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten._int_mm", "aten._scaled_mm",
    "mkldnn._linear_pointwise", "mkl._mkl_linear",
})
"""Post-grad node targets (overload packets) that lower through template selection."""


def fx_graph_cache_hits() -> int:
    """How many compiles so far loaded their graph from inductor's FX graph cache."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["fxgraph_cache_hit"])


LOWERING_SKIPPING_CACHES = {
    "fx_graph_cache": False,
    "autotune_local_cache": False,
    "autotune_remote_cache": False,
    "bundled_autotune_remote_cache": False,
}
"""Caches that let a compile skip lowering (and so record nothing); code caches stay on."""


class ObserverUnavailable(RuntimeError):
    """The installed torch lacks a hook the observer needs: the suite cannot observe anything."""


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise ObserverUnavailable(
            f"torch {torch.__version__}: inductor hook missing ({what}); this suite cannot observe "
            "template selection on this version")


@functools.cache
def check_hooks() -> None:
    """Fail loudly if any hook the observer relies on moved in the installed torch."""
    from torch._inductor import choices, select_algorithm, virtualized
    from torch._inductor.fx_passes import pad_mm

    _require(hasattr(choices.InductorChoices, "get_template_configs"), "InductorChoices.get_template_configs")
    _require(hasattr(choices.InductorChoices, "_need_to_fix_layout"), "InductorChoices._need_to_fix_layout")
    _require(hasattr(virtualized.V, "choices"), "V.choices")
    _require(hasattr(select_algorithm, "add_preprocessing_fn"), "select_algorithm.add_preprocessing_fn")
    _require(hasattr(select_algorithm, "add_feedback_saver"), "select_algorithm.add_feedback_saver")
    _require(hasattr(pad_mm, "should_pad"), "fx_passes.pad_mm.should_pad")
    _require(hasattr(select_algorithm.ExternKernelChoice, "src_hash")
             or "src_hash" in select_algorithm.ExternKernelChoice.__init__.__code__.co_names,
             "ExternKernelChoice.src_hash")
    keys = inductor_config_keys()
    for key in ("max_autotune_allow_flexible_layouts", "post_grad_custom_post_pass", "max_autotune_gemm_backends"):
        _require(key in keys, f"config.{key}")


def gate_now(device_type: str) -> Gate:
    """Read the inputs of `_need_to_fix_layout` from the config in force (version-aware)."""
    from torch._inductor import config, utils

    origami = getattr(utils, "_origami_enabled", None)  # 2.13+: ROCm-only origami forces fixed layouts
    return Gate(
        max_autotune=bool(config.max_autotune),
        max_autotune_gemm=bool(config.max_autotune_gemm),
        allow_flexible_layouts=bool(config.max_autotune_allow_flexible_layouts),
        backends=parse_backends(config.max_autotune_gemm_backends),
        device_type=device_type,
        origami_rocm=bool(origami is not None and origami() and torch.version.hip is not None),
        max_mm_configs=config.test_configs.max_mm_configs,
        cpp_weight_prepack=bool(config.cpp.weight_prepack),
    )


def record_choice(choice: Any) -> ChoiceRecord:
    from torch._inductor.select_algorithm import ExternKernelCaller, ExternKernelChoice

    ktc = getattr(choice, "annotations", {}).get("ktc")
    template = getattr(ktc, "template", None)
    if template is None and isinstance(choice, ExternKernelCaller):
        template = choice.choice  # extern choices made outside get_template_configs carry no ktc
    layout = type(getattr(choice, "layout", None)).__name__
    description = str(getattr(choice, "description", ""))[:200]
    if template is None:  # e.g. CPP templates (DataProcessorChoiceCallerWrapper around a CppTemplateCaller)
        inner = getattr(choice, "_wrapped", choice)
        name = re.sub(r"_\d+$", "", str(getattr(choice, "name", type(inner).__name__)))  # less the instance count
        return ChoiceRecord(kind="template", template=name,
                            template_class=type(inner).__name__, layout=layout, src_hash=None, has_src_hash=False,
                            description=description)
    return ChoiceRecord(kind="extern" if isinstance(template, ExternKernelChoice) else "template",
                        template=str(template.uid), template_class=type(template).__name__, layout=layout,
                        src_hash=getattr(template, "src_hash", None), has_src_hash=hasattr(template, "src_hash"),
                        description=description)


def _candidate_class(template: Any) -> str:
    from torch._inductor.select_algorithm import ExternKernelChoice

    return EXTERN_CANDIDATE if isinstance(template, ExternKernelChoice) else type(template).__name__


def _post_grad_probe(rec: Recording, salt: str) -> Any:
    """A CustomGraphPass that only records which mm-family nodes reached lowering. Its uuid is in
    the FX graph cache's key: a fresh `salt` makes a compile miss that cache (and so lower and be
    observed) even where the cache is on; the same salt again makes the next compile hit it."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class PostGradProbe(CustomGraphPass):
        def __call__(self, graph: torch.fx.Graph) -> None:
            rec.graphs += 1
            rec.post_grad_targets = [
                name for node in graph.nodes if node.op == "call_function"
                if (name := str(getattr(node.target, "_overloadpacket", node.target))) in MM_FAMILY_TARGETS]

        def uuid(self) -> str:
            return f"mm-fuzz-post-grad-probe{salt}"

    return PostGradProbe()


class Recording:
    """Events from one compile; `post_grad_targets` stays None if post-grad passes never ran.
    `graphs` counts the graphs inductor lowered (a later call may recompile)."""

    def __init__(self) -> None:
        self.selections: list[SelectionEvent] = []
        self.post_grad_targets: list[str] | None = None
        self.lowered: list[LoweredNode] = []
        self.graphs = 0
        self.offered: list[list[int]] = []  # ids of the choices each autotune selection offered
        self.unplaced: list[tuple[Any, str, Any, bool]] = []  # (graph, op, buffer, flexible) awaiting codegen
        self.placements: list[Placement] = []
        self.isolated = False  # a single-choice compile left its choice alone in the first graph
        self.padding: dict[str, list[bool]] = {}  # pad-mm's decisions, per op and operand shapes, in order

    def place(self, graph: Any) -> None:
        """Read, once `graph` is scheduled, where each mm-family result it selected ended up."""
        from torch._inductor import ir

        hint = graph.sizevars.optimization_hint if hasattr(graph.sizevars, "optimization_hint") \
            else graph.sizevars.size_hint
        for _, op, buffer, flexible in [u for u in self.unplaced if u[0] is graph]:
            name = buffer.get_name()
            layout = graph.name_to_buffer.get(name, buffer).get_output_spec()
            storage = name
            if isinstance(layout, ir.NonOwningLayout):  # it writes into a view of another buffer
                storage, layout = layout.view.data.get_name(), layout.view.get_layout()
            size = [int(hint(s)) for s in layout.size]
            stride = tuple(int(hint(s)) for s in layout.stride)
            contiguous = [s for s, n in zip(stride, size, strict=True) if n > 1] == \
                [s for s, n in zip(contiguous_strides(tuple(size)), size, strict=True) if n > 1]
            self.placements.append(Placement(op, name, storage, stride, int(hint(layout.offset)), flexible, contiguous))
        self.unplaced = [u for u in self.unplaced if u[0] is not graph]

    def note_failures(self, timings: dict[Any, float], survivors: list[Any]) -> None:
        """Mark, in the autotune selection these benchmark timings belong to, the choices inductor
        dropped (failed to precompile) or benchmarked as inf (failed to run)."""
        alive = {id(c) for c in survivors}
        times = {id(c): t for c, t in timings.items()}
        autotune = [i for i, e in enumerate(self.selections) if e.source == "autotune"]
        for ordinal in reversed(range(len(self.offered))):
            offered = self.offered[ordinal]
            if alive <= set(offered):
                failed = [(i, "precompile") for i, c in enumerate(offered) if c not in alive]
                failed += [(i, "benchmark") for i, c in enumerate(offered) if not math.isfinite(times.get(c, 0.0))]
                event = self.selections[autotune[ordinal]]
                self.selections[autotune[ordinal]] = dataclasses.replace(event, failed=tuple(sorted(failed)))
                return

    def autotune_ordinal(self) -> int:
        """How many autotune selections the graph being lowered has made so far."""
        return sum(e.source == "autotune" and e.graph == self.graphs - 1 for e in self.selections)


def _same_config(a: ChoiceRecord, b: ChoiceRecord) -> bool:
    return (a.template, a.description) == (b.template, b.description)


@dataclasses.dataclass(frozen=True)
class KeepChoice:
    """Leave the `ordinal`-th autotune selection of every graph with one choice: the `rank`-th of
    those like `choice` (same template and config), else (a recompiled graph offering other configs)
    the first choice of the same template, else all. Only an exact pick in the first graph isolates
    the choice (Recording.isolated)."""

    ordinal: int
    choice: ChoiceRecord
    rank: int = 0

    @classmethod
    def of(cls, ordinal: int, choices: Sequence[ChoiceRecord], index: int) -> KeepChoice:
        """Keep `choices[index]` of the `ordinal`-th selection (ranked among the choices like it)."""
        like = [c for c in choices[:index] if _same_config(c, choices[index])]
        return cls(ordinal, choices[index], len(like))

    def pick(self, offered: list[Any], records: list[ChoiceRecord]) -> tuple[list[Any], bool]:
        """(the choices left, whether that is the very choice)."""
        same = [c for c, r in zip(offered, records, strict=True) if _same_config(r, self.choice)]
        if len(same) > self.rank:
            return [same[self.rank]], True
        family = [c for c, r in zip(offered, records, strict=True) if r.template == self.choice.template]
        return family[:1] or offered, False


@contextlib.contextmanager
def _pad_decisions(rec: Recording, replay: dict[str, list[bool]] | None) -> Iterator[None]:
    """Note each pad-mm decision (per op and operand shapes, in order) in `rec.padding`; with
    `replay`, repeat those instead of deciding again. Pad-mm benchmarks padded against unpadded on a
    GPU, so a later compile of the same program may pad where the first did not: other shapes,
    other configs, and the choice a single-choice compile must keep is not offered."""
    from torch._inductor.fx_passes import pad_mm

    decide = pad_mm.should_pad
    replayed = {key: list(decisions) for key, decisions in (replay or {}).items()}

    def should_pad(match: Any, mat1: Any, mat2: Any, op: Any, *args: Any, **kwargs: Any) -> bool:
        key = f"{op} {[(tuple(t.shape), tuple(t.stride()), str(t.dtype)) for t in (mat1, mat2)]}"
        pending = replayed.get(key)
        decision = pending.pop(0) if pending else bool(decide(match, mat1, mat2, op, *args, **kwargs))
        rec.padding.setdefault(key, []).append(decision)
        return decision

    pad_mm.should_pad = should_pad
    try:
        yield
    finally:
        pad_mm.should_pad = decide


@contextlib.contextmanager
def _watch_lowerings(rec: Recording) -> Iterator[None]:
    """Wrap inductor's lowerings of mm-family aten ops to note, per node, whether lowering made a
    template selection or decomposed the op into pointwise/reduction IR (e.g. tiny bmm on CPU)."""
    from torch._inductor.lowering import lowerings

    def watch(target: Any, lower: Any) -> Any:
        def lowered(*args: Any, **kwargs: Any) -> Any:
            before = len(rec.selections)
            out = lower(*args, **kwargs)
            made = [e for e in rec.selections[before:] if e.source == "autotune"]
            selected = bool(made)
            buffer = getattr(getattr(out, "data", None), "data", None)  # TensorBox > StorageBox > Buffer
            if selected and hasattr(buffer, "get_name"):
                from torch._inductor.virtualized import V

                rec.unplaced.append((V.graph, str(target._overloadpacket), buffer,
                                     any(c.flexible for e in made for c in e.choices)))
            chain, node = [], out
            for _ in range(5):  # TensorBox > StorageBox > ComputedBuffer > Reduction, say
                node = getattr(node, "data", None)
                if node is None:
                    break
                chain.append(type(node).__name__)
            rec.lowered.append(LoweredNode(str(target._overloadpacket), selected, ">".join(chain)))
            return out
        return lowered

    originals = {t: fn for t, fn in lowerings.items()
                 if str(getattr(t, "_overloadpacket", "")) in MM_FAMILY_TARGETS
                 and getattr(t, "namespace", None) == "aten"}
    _require(bool(originals), "lowerings of aten.mm/addmm/bmm")
    from torch._inductor.graph import GraphLowering

    codegen = GraphLowering.codegen

    def placed(graph: Any) -> Any:
        out = codegen(graph)
        rec.place(graph)
        return out

    lowerings.update({t: watch(t, fn) for t, fn in originals.items()})
    GraphLowering.codegen = placed  # type: ignore[method-assign,assignment]  # patched for the body, restored after
    try:
        yield
    finally:
        lowerings.update(originals)
        GraphLowering.codegen = codegen  # type: ignore[method-assign]  # the original, back


@contextlib.contextmanager
def record_selections(device_type: str, keep: KeepChoice | None = None,
                      padding: dict[str, list[bool]] | None = None, salt: str = "") -> Iterator[Recording]:
    """Record every template-selection call made while the body compiles. With `keep`, one
    selection of each graph is left with a single choice (a single-choice compile); with `padding`
    (an earlier compile's Recording.padding), pad-mm decides as it did there; `salt`: see
    _post_grad_probe."""
    check_hooks()
    from torch._inductor import config, select_algorithm
    from torch._inductor.virtualized import V

    rec = Recording()

    judged: list[Any] = []  # the candidates the layout gate saw in the current get_template_configs call
    handler = type(V.choices)  # patched on the class, not set as V's handler: V is thread-local, and a
    # backward compiled lazily on a CUDA autograd thread would gather its choices unseen
    need_to_fix_layout, get_template_configs = handler._need_to_fix_layout, handler.get_template_configs

    def judging(self: Any, adjusted_choices: list[Any], op_name: str) -> Any:
        judged[:] = adjusted_choices
        return need_to_fix_layout(self, adjusted_choices, op_name)

    def gathering(self: Any, kernel_inputs: Any, templates: Any, op_name: str, kwarg_overrides: Any = None) -> Any:
        gate = gate_now(device_type)
        judged.clear()
        out = get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides)
        unbuilt = tuple(_candidate_class(ktc.template) for ktc in judged if ktc.choice is None)
        rec.selections.append(SelectionEvent("template_configs", op_name, tuple(record_choice(c) for c in out),
                                             gate, rec.graphs - 1,
                                             tuple(_operand(n) for n in kernel_inputs.nodes()), unbuilt=unbuilt))
        return out

    def before_autotune(choices: list[Any]) -> list[Any]:
        caller = sys._getframe(1).f_locals  # AlgorithmSelectorCache.__call__(self, name, choices, ...)
        ordinal = rec.autotune_ordinal()
        records = [record_choice(c) for c in choices]
        layout = caller.get("layout")
        rec.offered.append([id(c) for c in choices])
        rec.selections.append(SelectionEvent(
            "autotune", str(caller.get("name", "?")), tuple(records), gate_now(device_type), rec.graphs - 1,
            operands=tuple(_operand(n) for n in caller.get("input_nodes") or ()),
            out_dtype=str(getattr(layout, "dtype", "")).removeprefix("torch."),
            device=str(getattr(getattr(layout, "device", None), "type", device_type))))
        if keep is not None and keep.ordinal == ordinal:
            kept, exact = keep.pick(choices, records)
            rec.isolated = rec.isolated or (exact and rec.graphs == 1)
            return kept
        return choices

    def after_benchmark(timings: dict[Any, float], name: str, input_nodes: Any, choices: list[Any],
                        *_: Any) -> None:
        rec.note_failures(timings, choices)

    select_algorithm.add_preprocessing_fn(before_autotune)
    select_algorithm.add_feedback_saver(after_benchmark)
    try:
        with mock.patch.object(handler, "_need_to_fix_layout", judging), \
                mock.patch.object(handler, "get_template_configs", gathering), _watch_lowerings(rec), \
                _pad_decisions(rec, padding), config.patch(post_grad_custom_post_pass=_post_grad_probe(rec, salt)):
            yield rec
    finally:
        select_algorithm.clear_preprocessing_fns()
        select_algorithm.clear_feedback_savers()


def _static(values: Any) -> tuple[int | None, ...]:
    out: list[int | None] = []
    for v in values:
        try:
            out.append(int(v))
        except (TypeError, ValueError):  # a symbolic size
            out.append(None)
    return tuple(out)


def _operand(node: Any) -> Operand:
    """What a template's eligibility depends on, read off one input IR node."""
    stride = node.maybe_get_stride() if hasattr(node, "maybe_get_stride") else None
    return Operand(_static(node.get_size()), None if stride is None else _static(stride),
                   str(node.get_dtype()).removeprefix("torch."))
