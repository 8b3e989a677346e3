"""The one module that touches inductor internals.

It records, through inductor's own extension points, every template-selection call while a case
compiles: `V.set_choices_handler` (a subclass wrapping `get_template_configs`),
`select_algorithm.add_preprocessing_fn` (every choice that reaches autotuning) and
`config.post_grad_custom_post_pass` (which mm-family nodes reached lowering). Version
differences are handled here; a missing hook raises ObserverUnavailable with one clear line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import math
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from oracles.model import ChoiceRecord, Failure, Gate, LoweredNode, Operand, Placement, SelectionEvent
from strategies.case import contiguous_strides, inductor_config_keys

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


def precompile_benchmark_headers() -> bool:
    """Compile the CPP GEMM choices' autotune benchmark modules with inductor's precompiled
    `cpp_prefix.h` (its output-code kernels already use it; a benchmark module, compiled through
    the base `CppCodeCache`, parses the header from scratch: 7-8 s instead of 3-4 s per choice on
    2 cores). Same source, flags and header, so the same code and the same compiler errors; only
    the parse is cached. A speed-up for the suite's workers, never applied by the naive baseline;
    False (nothing changed) where this torch lacks the hook."""
    from torch._inductor import codecache

    base = codecache.CppCodeCache
    prefix = getattr(codecache, "_get_cpp_prefix_header", None)
    original = base.__dict__.get("_get_uncompiled_header")
    if prefix is None or not isinstance(original, classmethod):
        return False
    if getattr(original.__func__, "mm_fuzz_prefix_header", False):
        return True

    def uncompiled_header(cls: type, device: str) -> str | None:
        return prefix(device) if cls is base else original.__func__(cls, device)

    uncompiled_header.mm_fuzz_prefix_header = True  # type: ignore[attr-defined]
    base._get_uncompiled_header = classmethod(uncompiled_header)  # type: ignore[method-assign,assignment]
    return True


SOURCE_ERROR = re.compile(r"\.(?:cpp|h):\d+:\d+: error: ")
"""A diagnostic about the source itself: the same command on the same source fails the same way."""
TRANSIENT_FAILURE = re.compile(r"internal compiler error|Killed signal|No space left|cannot allocate", re.IGNORECASE)


def remember_compile_failures() -> bool:
    """Make a C++ compile that already failed on this machine's code cache fail again without
    running the compiler: inductor's code cache keeps what compiled, this keeps what did not, in
    the same `TORCHINDUCTOR_CACHE_DIR`. Keyed by the command line, the source files' bytes, the
    compiler binary and the torch build (whose headers the source includes); only failures with a
    diagnostic in the source are kept (a killed or crashed compiler runs again). The same
    `CppCompileError`, command and output are raised, so a choice that does not compile is dropped
    as before. A speed-up for the suite's workers (a campaign that keeps drawing or shrinking a
    case whose C++ does not compile), never applied by the naive baseline; False (nothing
    changed) where this torch lacks the hook."""
    from torch._inductor import exc

    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
    except ImportError:
        return False

    def remembering(original: CompileCommand) -> CompileCommand:
        def run_compile_cmd(cmd_line: str, cwd: str) -> None:
            stored = _failure_record(cmd_line, cwd, Path(cache_dir()))
            if stored is not None and stored.is_file():
                raise exc.CppCompileError(shlex.split(cmd_line), stored.read_text(encoding="utf-8"))
            try:
                original(cmd_line, cwd)
            except exc.CppCompileError as error:
                if stored is not None and SOURCE_ERROR.search(error.output) and not TRANSIENT_FAILURE.search(error.output):
                    stored.parent.mkdir(parents=True, exist_ok=True)
                    partial = stored.with_suffix(f".{os.getpid()}.tmp")
                    partial.write_text(error.output, encoding="utf-8")
                    os.replace(partial, stored)
                raise
        return run_compile_cmd

    return _wrap_compile_commands("mm_fuzz_remembers_failures", remembering)


CompileCommand = Callable[[str, str], None]
"""How inductor runs one compiler command line: (command line, working directory)."""


def _wrap_compile_commands(marker: str, wrap: Callable[[CompileCommand], CompileCommand]) -> bool:
    """Run inductor's compiler commands through `wrap(the runner in place)`, installed once per
    process (`marker` tells it is); False where this torch lacks the hook."""
    from torch._inductor import cpp_builder, exc

    original = getattr(cpp_builder, "_run_compile_cmd", None)
    if original is None or not hasattr(exc, "CppCompileError"):
        return False
    if not getattr(original, marker, False):
        runner = wrap(original)
        setattr(runner, marker, True)
        cpp_builder._run_compile_cmd = runner
    return True


def _failure_record(cmd_line: str, cwd: str, cache: Path) -> Path | None:
    """Where a failure of this exact compile is kept; None when its inputs cannot be read."""
    args = shlex.split(cmd_line)
    compiler = shutil.which(args[0]) if args else None
    if compiler is None:
        return None
    digest = hashlib.sha256(cmd_line.encode())
    stat = os.stat(compiler)
    digest.update(f"\0{os.path.realpath(compiler)}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    digest.update(f"\0{torch.__version__}\0{torch.version.git_version}".encode())  # the headers it includes
    for arg in args[1:]:
        if arg.endswith((".cpp", ".h")) and not arg.startswith("-"):
            try:
                digest.update(b"\0" + (Path(cwd) / arg).read_bytes())
            except OSError:
                return None
    return cache / "mm_fuzz_compile_failures" / f"{digest.hexdigest()}.txt"


GOLD = "-fuse-ld=gold"
GOLD_REFUSED: dict[str, str] = {}
"""Compilers whose gold link of one of inductor's modules failed in this process, and gold's output."""


def link_with_gold() -> bool:
    """Link inductor's C++ modules with binutils' gold instead of the compiler's default linker
    (GNU ld reads libtorch_cpu's 400 MB symbol tables: 0.44 s of a 0.85 s module on 2 cores, gold
    0.16 s). Compiling is untouched (same source, flags and object code); only the `-shared` link
    that packs the object into a .so changes. A compile error is raised as inductor's own command
    gave it; any other failure runs inductor's own command, so a gold-only link failure is never a
    verdict, and after one such failure this process links with inductor's own linker again (on the
    H200 image gold cannot find /opt/gcc's libstdc++.so, which GNU ld finds). A speed-up for the
    suite's workers, never applied by the naive baseline; a compiler that cannot link a C++ shared
    object with gold runs its commands unchanged; False where this torch lacks the hook."""
    from torch._inductor import exc

    def linking_with_gold(original: CompileCommand) -> CompileCommand:
        def run_compile_cmd(cmd_line: str, cwd: str) -> None:
            args = shlex.split(cmd_line)
            if not links_shared_object(args) or any(a.startswith("-fuse-ld") for a in args) \
                    or args[0] in GOLD_REFUSED or not _links_with_gold(args[0]):
                return original(cmd_line, cwd)
            try:
                return original(f"{cmd_line} {GOLD}", cwd)
            except exc.CppCompileError as error:
                if SOURCE_ERROR.search(error.output):
                    raise exc.CppCompileError(args, error.output) from None
                GOLD_REFUSED[args[0]] = error.output
            return original(cmd_line, cwd)
        return run_compile_cmd

    return _wrap_compile_commands("mm_fuzz_links_with_gold", linking_with_gold)


def links_shared_object(args: Sequence[str]) -> bool:
    """Whether a compiler command links a .so (not one that only compiles an object: `-c`)."""
    return "-shared" in args and "-c" not in args


@functools.cache
def _links_with_gold(compiler: str) -> bool:
    """Whether `compiler` links a C++ shared object with gold on this machine (asked once per
    process: gold's own note must be in the result, so a compiler that ignores the flag says no)."""
    with tempfile.TemporaryDirectory() as tmp:
        source, shared = Path(tmp, "probe.cpp"), Path(tmp, "probe.so")
        source.write_text("int mm_fuzz_probe() { return 0; }\n")
        try:
            subprocess.run([compiler, str(source), "-shared", "-fPIC", GOLD, "-o", str(shared)],
                           capture_output=True, timeout=60, check=True)
            return b".note.gnu.gold-version" in shared.read_bytes()
        except (OSError, subprocess.SubprocessError):
            return False


def skip_guard_latency_profiling() -> bool:
    """Skip dynamo's guard-latency sample: every compile flushes the CPU caches and times its
    guards once, only to log the latency (21 ms a compile on 2 cores, and the flush evicts the
    other workers' caches). The guards themselves are built and checked as before. A speed-up for
    the suite's workers, never applied by the naive baseline; False where this torch lacks it."""
    from torch._dynamo import guards

    if not callable(getattr(guards, "profile_guard_manager", None)):
        return False
    guards.profile_guard_manager = _no_guard_latency
    return True


def _no_guard_latency(*args: Any) -> float:
    return 0.0


def parse_templates_once() -> bool:
    """Parse each Jinja source of inductor's kernel templates once per worker: the CPP GEMM
    templates parse theirs again on every render (8 a case, 14 ms for the GEMM template alone on 2
    cores). The same source in the same environment gives the same template, and rendering one
    leaves it as it was, so the rendered kernels are the same. A speed-up for the suite's workers,
    never applied by the naive baseline; False where this torch lacks the hook."""
    from torch._inductor.codegen.common import KernelTemplate

    held = KernelTemplate.__dict__.get("_template_from_string")
    if not isinstance(held, staticmethod):
        return False
    if getattr(held.__func__, "mm_fuzz_parsed_once", False):
        return True
    parse = functools.lru_cache(maxsize=1024)(held.__func__)
    parse.mm_fuzz_parsed_once = True  # type: ignore[attr-defined]
    KernelTemplate._template_from_string = staticmethod(parse)  # type: ignore[method-assign,assignment]
    return True


def speed_up_compiles() -> None:
    """Install the compile speed-ups that leave what the oracles see as it was (each function's
    docstring says why): precompiled headers for CPP benchmark modules, no guard-latency sample,
    templates parsed once, modules linked with gold."""
    precompile_benchmark_headers()
    skip_guard_latency_profiling()
    parse_templates_once()
    link_with_gold()


COMPILER_MODULES = (
    "torch._dynamo", "torch._functorch.aot_autograd", "torch._inductor.compile_fx", "torch._inductor.graph",
    "torch._inductor.scheduler", "torch._inductor.select_algorithm", "torch._inductor.kernel.mm",
    "torch._inductor.kernel.bmm", "torch._inductor.codegen.simd", "torch._inductor.codegen.cpp",
    "torch._inductor.codegen.cpp_gemm_template", "torch._inductor.codegen.cpp_wrapper_cpu",
)
"""The modules a max-autotune compile imports on first use (most of a worker's start-up)."""


def preload_compiler() -> None:
    """Import what a max-autotune compile imports, without compiling (for a worker zygote: no
    thread pool, no CUDA); with Triton installed its codegen too. Modules this torch lacks are
    skipped (the first compile imports what it needs, as before)."""
    import importlib
    import importlib.util

    names = COMPILER_MODULES + (("torch._inductor.codegen.triton",) if importlib.util.find_spec("triton") else ())
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def serialize_gpu_benchmarks(lock_path: str) -> bool:
    """Time kernels on the GPU (autotuning, pad-mm's padded-or-not decision) only while holding
    an exclusive lock on `lock_path`, shared by every worker of that GPU: timings taken while
    other workers' benchmarks run on the same GPU decide differently (a pad-mm decision flipped
    in 1 to 2 of 113 cases with 8 or 16 workers), and a decision is a verdict's input. The rest of
    a case (compiles, eager, references) still overlaps. False where this torch lacks the hook."""
    import fcntl
    import threading

    from torch._inductor.runtime import benchmarking

    timer = getattr(benchmarking, "benchmarker", None)
    names = [n for n in ("benchmark_gpu", "benchmark_gpu_with_cuda_graph") if callable(getattr(timer, n, None))]
    if "benchmark_gpu" not in names:
        return False
    if getattr(timer.benchmark_gpu, "mm_fuzz_locked", False):
        return True
    os.makedirs(os.path.dirname(os.path.abspath(lock_path)), exist_ok=True)
    handle = open(lock_path, "a")  # noqa: SIM115 - held for the life of the worker
    depth = threading.local()

    def locked(method: Any) -> Any:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            outer = not getattr(depth, "n", 0)
            if outer:
                fcntl.flock(handle, fcntl.LOCK_EX)
            depth.n = getattr(depth, "n", 0) + 1
            try:
                return method(*args, **kwargs)
            finally:
                depth.n -= 1
                if outer:
                    fcntl.flock(handle, fcntl.LOCK_UN)
        timed.mm_fuzz_locked = True  # type: ignore[attr-defined]
        return timed

    for name in names:
        setattr(timer, name, locked(getattr(timer, name)))
    return True


NO_VALID_CHOICES = {"No choices exist": "no-choices", "All choices failed to compile": "all-failed-to-compile"}
"""NoValidChoicesError's reasons (select_algorithm.py); a bare one means every benchmark failed."""


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
    _require(hasattr(virtualized.V, "set_choices_handler"), "V.set_choices_handler")
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
        backends=tuple(b.strip().upper() for b in config.max_autotune_gemm_backends.split(",") if b.strip()),
        device_type=device_type,
        origami_rocm=bool(origami is not None and origami() and torch.version.hip is not None),
        max_mm_configs=config.test_configs.max_mm_configs,
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


def _post_grad_probe(rec: "Recording") -> Any:
    """A CustomGraphPass that only records which mm-family nodes reached lowering."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class PostGradProbe(CustomGraphPass):
        def __call__(self, graph: torch.fx.Graph) -> None:
            rec.graphs += 1
            rec.post_grad_targets = [
                name for node in graph.nodes if node.op == "call_function"
                if (name := str(getattr(node.target, "_overloadpacket", node.target))) in MM_FAMILY_TARGETS]

        def uuid(self) -> str:
            return "mm-fuzz-post-grad-probe"

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
        for g, op, buffer, flexible in [u for u in self.unplaced if u[0] is graph]:
            name = buffer.get_name()
            layout = graph.name_to_buffer.get(name, buffer).get_output_spec()
            storage = name
            if isinstance(layout, ir.NonOwningLayout):  # it writes into a view of another buffer
                storage, layout = layout.view.data.get_name(), layout.view.get_layout()
            size = [int(hint(s)) for s in layout.size]
            stride = tuple(int(hint(s)) for s in layout.stride)
            contiguous = [s for s, n in zip(stride, size) if n > 1] == \
                [s for s, n in zip(contiguous_strides(tuple(size)), size) if n > 1]
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
        same = [c for c, r in zip(offered, records) if _same_config(r, self.choice)]
        if len(same) > self.rank:
            return [same[self.rank]], True
        family = [c for c, r in zip(offered, records) if r.template == self.choice.template]
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
                 if str(getattr(t, "_overloadpacket", "")) in MM_FAMILY_TARGETS and t.namespace == "aten"}
    _require(bool(originals), "lowerings of aten.mm/addmm/bmm")
    from torch._inductor.graph import GraphLowering

    codegen = GraphLowering.codegen

    def placed(graph: Any) -> Any:
        out = codegen(graph)
        rec.place(graph)
        return out

    lowerings.update({t: watch(t, fn) for t, fn in originals.items()})
    GraphLowering.codegen = placed
    try:
        yield
    finally:
        lowerings.update(originals)
        GraphLowering.codegen = codegen


@contextlib.contextmanager
def record_selections(device_type: str, keep: KeepChoice | None = None,
                      padding: dict[str, list[bool]] | None = None) -> Iterator[Recording]:
    """Record every template-selection call made while the body compiles. With `keep`, one
    selection of each graph is left with a single choice (a single-choice compile); with `padding`
    (an earlier compile's Recording.padding), pad-mm decides as it did there."""
    check_hooks()
    from torch._inductor import config, select_algorithm
    from torch._inductor.virtualized import V

    rec = Recording()

    class RecordingChoices(type(V.choices)):  # type: ignore[misc]
        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):  # type: ignore[no-untyped-def]
            gate = gate_now(device_type)
            out = super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)
            rec.selections.append(SelectionEvent("template_configs", op_name, tuple(record_choice(c) for c in out),
                                                 gate, rec.graphs - 1, tuple(_operand(n) for n in kernel_inputs.nodes())))
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
        with V.set_choices_handler(RecordingChoices()), _watch_lowerings(rec), _pad_decisions(rec, padding), config.patch(
                post_grad_custom_post_pass=_post_grad_probe(rec)):
            yield rec
    finally:
        select_algorithm.clear_preprocessing_fns()
        select_algorithm.clear_feedback_savers()


def _static(values: Any) -> tuple[int | None, ...]:
    out = []
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


BOILERPLATE = ("Set TORCHDYNAMO_VERBOSE", "For even more developer context", "You can suppress this exception",
               "Set TORCH_LOGS")
"""Lines torch appends to every compile error: never the message that tells failures apart."""


def _compiler_error(exc: BaseException) -> str:
    """The first `error:` line a failed C++ compile printed (CalledProcessError keeps its output)."""
    output = getattr(exc, "stderr", None) or getattr(exc, "output", None) or ""
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
    line = next((ln for ln in text.splitlines() if "error:" in ln), "")
    return line.split("error:", 1)[1].strip() if line else ""


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
    """Innermost exception type, its first meaningful message line (a C++ compile error's own
    `error:` line), and the innermost torch/_inductor frame (else the innermost torch frame)
    across the cause chain."""
    chain = _cause_chain(exc)
    no_choices = next((next((kind for text, kind in NO_VALID_CHOICES.items() if text in str(e)), "all-failed-to-run")
                       for e in chain if type(e).__name__ == "NoValidChoicesError"), "")
    fs = innermost_frame(exc)
    frame = ""
    if fs is not None:
        path = fs.filename.replace(os.sep, "/")
        frame = f"{path.split('torch/_inductor/' if 'torch/_inductor/' in path else 'torch/')[-1]}:{fs.name}"
    lines = [_compiler_error(e) for e in reversed(chain)]
    lines += [line.strip() for e in reversed(chain) for line in str(e).splitlines()]
    message = next((line for line in lines if line and not line.endswith(":")
                    and not line.startswith(BOILERPLATE)), "")[:300]
    return Failure(type=type(chain[-1]).__name__, message=message, frame=frame, no_valid_choices=no_choices)
