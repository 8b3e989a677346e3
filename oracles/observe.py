"""The one module that touches inductor internals.

It records, through inductor's own extension points, every template-selection call while a case
compiles: `V.set_choices_handler` (a subclass wrapping `get_template_configs`),
`select_algorithm.add_preprocessing_fn` (every choice that reaches autotuning) and
`config.post_grad_custom_post_pass` (which mm-family nodes reached lowering). Version
differences are handled here; a missing hook raises ObserverUnavailable with one clear line.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import torch

from oracles.model import ChoiceRecord, Failure, Gate, LoweredNode, SelectionEvent

MM_FAMILY_TARGETS = frozenset({
    "aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten._int_mm", "aten._scaled_mm",
    "mkldnn._linear_pointwise", "mkl._mkl_linear",
})
"""Post-grad node targets (overload packets) that lower through template selection."""

LOWERING_SKIPPING_CACHES = {
    "fx_graph_cache": False,
    "autotune_local_cache": False,
    "autotune_remote_cache": False,
    "bundled_autotune_remote_cache": False,
}
"""Caches that let a compile skip lowering (and so record nothing); code caches stay on."""


CONFIG_LIMITS = ("NoValidChoicesError", "ConstraintViolationError")
"""Errors that mean the case asked for something its config cannot do (no backend serves the
shape; a dim marked dynamic that the program pins to a constant), not an inductor bug."""


class ObserverUnavailable(RuntimeError):
    """The installed torch lacks a hook the observer needs: the suite cannot observe anything."""


@functools.cache
def inductor_config_keys() -> frozenset[str]:
    from torch._inductor import config

    return frozenset(config._config)  # the registry of every key, dotted sub-configs included


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise ObserverUnavailable(
            f"torch {torch.__version__}: inductor hook missing ({what}); this suite cannot observe "
            "template selection on this version")


@functools.cache
def check_hooks() -> None:
    """Fail loudly if any hook the observer relies on moved in the installed torch."""
    from torch._inductor import choices, select_algorithm, virtualized

    _require(hasattr(choices.InductorChoices, "get_template_configs"), "InductorChoices.get_template_configs")
    _require(hasattr(choices.InductorChoices, "_need_to_fix_layout"), "InductorChoices._need_to_fix_layout")
    _require(hasattr(virtualized.V, "set_choices_handler"), "V.set_choices_handler")
    _require(hasattr(select_algorithm, "add_preprocessing_fn"), "select_algorithm.add_preprocessing_fn")
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
        backends=tuple(b.strip().upper() for b in config.max_autotune_gemm_backends.split(",") if b.strip()),
        device_type=device_type,
        origami_rocm=bool(origami is not None and origami() and torch.version.hip is not None),
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
        return ChoiceRecord(kind="template", template=str(getattr(choice, "name", type(inner).__name__)),
                            template_class=type(inner).__name__, layout=layout, src_hash=None, has_src_hash=False,
                            description=description)
    return ChoiceRecord(kind="extern" if isinstance(template, ExternKernelChoice) else "template",
                        template=str(template.uid), template_class=type(template).__name__, layout=layout,
                        src_hash=getattr(template, "src_hash", None), has_src_hash=hasattr(template, "src_hash"),
                        description=description)


def _post_grad_probe(rec: "Recording") -> Any:
    """A CustomGraphPass that only records which mm-family nodes reached lowering."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class PostGradProbe(CustomGraphPass):
        def __call__(self, graph: torch.fx.Graph) -> None:
            rec.post_grad_targets = [
                name for node in graph.nodes if node.op == "call_function"
                if (name := str(getattr(node.target, "_overloadpacket", node.target))) in MM_FAMILY_TARGETS]

        def uuid(self) -> str:
            return "mm-fuzz-post-grad-probe"

    return PostGradProbe()


class Recording:
    """Events from one compile; `post_grad_targets` stays None if post-grad passes never ran."""

    def __init__(self) -> None:
        self.selections: list[SelectionEvent] = []
        self.post_grad_targets: list[str] | None = None
        self.lowered: list[LoweredNode] = []


@contextlib.contextmanager
def _watch_lowerings(rec: Recording) -> Iterator[None]:
    """Wrap inductor's lowerings of mm-family aten ops to note, per node, whether lowering made a
    template selection or decomposed the op into pointwise/reduction IR (e.g. tiny bmm on CPU)."""
    from torch._inductor.lowering import lowerings

    def watch(target: Any, lower: Any) -> Any:
        def lowered(*args: Any, **kwargs: Any) -> Any:
            before = len(rec.selections)
            out = lower(*args, **kwargs)
            selected = any(e.source == "autotune" for e in rec.selections[before:])
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
                 if str(getattr(t, "_overloadpacket", "")) in MM_FAMILY_TARGETS and t.namespace == "aten"}
    _require(bool(originals), "lowerings of aten.mm/addmm/bmm")
    lowerings.update({t: watch(t, fn) for t, fn in originals.items()})
    try:
        yield
    finally:
        lowerings.update(originals)


@contextlib.contextmanager
def record_selections(device_type: str, keep: tuple[int, int] | None = None) -> Iterator[Recording]:
    """Record every template-selection call made while the body compiles. With `keep=(s, i)`,
    the s-th autotune selection is left with only its i-th choice (a single-choice compile)."""
    check_hooks()
    from torch._inductor import config, select_algorithm
    from torch._inductor.virtualized import V

    rec = Recording()

    class RecordingChoices(type(V.choices)):  # type: ignore[misc]
        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):  # type: ignore[no-untyped-def]
            gate = gate_now(device_type)
            out = super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)
            rec.selections.append(SelectionEvent("template_configs", op_name,
                                                 tuple(record_choice(c) for c in out), gate))
            return out

    def before_autotune(choices: list[Any]) -> list[Any]:
        caller = sys._getframe(1).f_locals  # AlgorithmSelectorCache.__call__(self, name, choices, ...)
        ordinal = sum(e.source == "autotune" for e in rec.selections)
        rec.selections.append(SelectionEvent("autotune", str(caller.get("name", "?")),
                                             tuple(record_choice(c) for c in choices)))
        if keep is not None and keep[0] == ordinal:
            return [choices[keep[1]]]
        return choices

    select_algorithm.add_preprocessing_fn(before_autotune)
    try:
        with V.set_choices_handler(RecordingChoices()), _watch_lowerings(rec), config.patch(
                post_grad_custom_post_pass=_post_grad_probe(rec)):
            yield rec
    finally:
        select_algorithm.clear_preprocessing_fns()


_CATALOGUE_SCRIPT = r"""
import hashlib, importlib, json, pkgutil, sys
from torch._inductor.codegen.common import KernelTemplate
sources = {}
_from_string = KernelTemplate._template_from_string
def _capture(source):
    caller = sys._getframe(1)
    if caller.f_code.co_name == "__init__" and isinstance(caller.f_locals.get("name"), str):
        sources.setdefault(caller.f_locals["name"], source)
    return _from_string(source)
KernelTemplate._template_from_string = staticmethod(_capture)
exec(sys.argv[1])
import torch._inductor.kernel as kernels
from torch._inductor.select_algorithm import TritonTemplate
for mod in pkgutil.walk_packages(kernels.__path__, kernels.__name__ + "."):
    try:
        importlib.import_module(mod.name)
    except ImportError:  # optional backends (e.g. CUTLASS bindings) absent on this machine
        pass
out = {}
for name, t in TritonTemplate.all_templates.items():
    src = sources.get(name)
    out[t.uid] = {"src_hash": t.src_hash,
                  "source_sha256": None if src is None else hashlib.sha256(src.encode("utf-8")).hexdigest()}
print(json.dumps(out))
"""


def template_catalogue(prelude: str = "") -> dict[str, dict[str, str | None]]:
    """Every Triton template inductor defines, read in a fresh process: uid -> its `src_hash`
    and the sha256 of the source it was built from (captured as the template was constructed).

    `prelude` runs before inductor's templates are imported (tests use it to plant bugs)."""
    proc = subprocess.run([sys.executable, "-c", _CATALOGUE_SCRIPT, prelude], capture_output=True, text=True,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=600)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ObserverUnavailable(f"could not list inductor's Triton templates in a fresh process: {last}")
    catalogue = json.loads(proc.stdout.strip().splitlines()[-1])
    if not catalogue:
        raise ObserverUnavailable("inductor defines no Triton templates on this torch: src_hash cannot be checked")
    return catalogue


def _cause_chain(exc: BaseException) -> list[BaseException]:
    """`exc`, then what caused it, outermost first (no exception twice)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def innermost_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost torch/_inductor frame (else the innermost torch frame) across the cause chain."""
    frames = [fs for e in _cause_chain(exc) for fs in traceback.extract_tb(e.__traceback__)]
    paths = [fs.filename.replace(os.sep, "/") for fs in frames]
    return next((fs for fs, p in zip(reversed(frames), reversed(paths)) if "torch/_inductor/" in p),
                next((fs for fs, p in zip(reversed(frames), reversed(paths)) if "/torch/" in p), None))


def describe_failure(exc: BaseException) -> Failure:
    """Innermost exception type, its first meaningful message line, and the innermost
    torch/_inductor frame (else the innermost torch frame) across the cause chain."""
    chain = _cause_chain(exc)
    config_limit = any(name in type(e).__name__ or name in str(e) for e in chain for name in CONFIG_LIMITS)
    fs = innermost_frame(exc)
    frame = ""
    if fs is not None:
        path = fs.filename.replace(os.sep, "/")
        frame = f"{path.split('torch/_inductor/' if 'torch/_inductor/' in path else 'torch/')[-1]}:{fs.name}"
    lines = [line.strip() for e in reversed(chain) for line in str(e).splitlines()]
    message = next((line for line in lines if line and not line.endswith(":")), "")[:300]
    return Failure(type=type(chain[-1]).__name__, message=message, frame=frame, config_limit=config_limit)
