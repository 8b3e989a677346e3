"""Run one Case: materialize inputs, run eager, compile with max-autotune under the case's config
in a fresh dynamo state while the observer records template selection, compute float64
references and the error bound of the kernels that computed each output. Returns an
Observation for the oracles; never raises for a case."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from fuzz.probe import inductor, observe
from fuzz.probe.failures import describe_failure
from fuzz.probe.timing import Timings
from fuzz.run import programs
from fuzz.run.values import materialize
from oracles.error_model import KernelModel
from oracles.model import ChoiceRecord, Failure, Observation, OutputCheck, SelectionEvent, TensorMeta
from strategies.case import Case, TensorSpec


class HashLedger:
    """First-seen `src_hash` of each template in this process, so later compiles can be compared."""

    def __init__(self) -> None:
        self.first_seen: dict[str, str | None] = {}

    def note(self, obs: Observation) -> None:
        obs.earlier_hashes = {c.template: self.first_seen[c.template]
                              for c in obs.choices if c.template in self.first_seen}
        for c in obs.choices:
            self.first_seen.setdefault(c.template, c.src_hash)


@contextlib.contextmanager
def _precision(case: Case) -> Iterator[None]:
    """The case's matmul precision flags (TF32; fp16/bf16 reduced-precision reductions), for eager
    and compiled alike."""
    matmul = torch.backends.cuda.matmul
    flags = {"allow_tf32": case.tf32, "allow_fp16_reduced_precision_reduction": case.reduced_precision,
             "allow_bf16_reduced_precision_reduction": case.reduced_precision}
    prior = {name: getattr(matmul, name) for name in flags}
    try:
        for name, value in flags.items():
            setattr(matmul, name, value)
        yield
    finally:
        for name, value in prior.items():
            setattr(matmul, name, value)


TENSOR_CORE_DTYPES = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


def kernel_model(case: Case, choices: Sequence[ChoiceRecord]) -> KernelModel:
    """What the kernels among `choices` may do to the numbers (see oracles/error_model.py):
    TF32 where the case allows it on CUDA; fp16/bf16 split-K partial sums for cuBLAS (extern
    choices) where the case allows reduced-precision reductions; truncating tensor-core
    accumulation for CUDA matmuls of fp16/bf16/fp8 operands or under TF32."""
    cuda = case.device == "cuda"
    return KernelModel(tf32=cuda and case.tf32,
                       half_partials=cuda and case.reduced_precision and any(c.kind == "extern" for c in choices),
                       tensor_cores=cuda and (case.tf32 or case.inputs[0].dtype in TENSOR_CORE_DTYPES),
                       fp8=cuda and case.inputs[0].dtype.startswith("float8"))


def _calls(case: Case) -> list[tuple[TensorSpec, ...]]:
    return [case.inputs] + ([case.second_call] if case.second_call else [])


def _cpu(outputs: Any) -> list[torch.Tensor]:
    return [t.detach().cpu() for t in outputs]


def _metas(outputs: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor]) -> list[TensorMeta]:
    """Each output's strides, offset and view-ness on its device, and what it shares storage with."""
    def storage(t: torch.Tensor) -> int | None:
        s = t.untyped_storage()
        return s.data_ptr() if s.nbytes() else None

    named = [(f"out{k}", storage(t)) for k, t in enumerate(outputs)] + \
        [(f"in{i}", storage(t)) for i, t in enumerate(inputs)]
    return [TensorMeta(tuple(t.stride()), int(t.storage_offset()), t._is_view(),
                       tuple(name for name, ptr in named
                             if ptr is not None and ptr == storage(t) and name != f"out{k}"))
            for k, t in enumerate(outputs)]


class _Run:
    """Outputs of every call of one compiled (or eager) program: CPU copies and device metadata."""

    def __init__(self) -> None:
        self.values: list[list[torch.Tensor]] = []
        self.metas: list[list[TensorMeta]] = []

    def add(self, outputs: Sequence[torch.Tensor], args: Sequence[torch.Tensor]) -> None:
        self.metas.append(_metas(outputs, args))
        self.values.append(_cpu(outputs))


def run_case(case: Case, *, ledger: HashLedger | None = None) -> Observation:
    """Compile and run `case`; every failure is recorded in the Observation, never raised."""
    obs = Observation(case=case, torch_version=torch.__version__)
    timings = Timings()
    grad = torch.no_grad() if case.frozen_weights else contextlib.nullcontext()
    with _precision(case), grad:
        try:
            eager, references = _eager(case, timings)
        except Exception as e:  # noqa: BLE001 - the op rejects the case: recorded, not a finding
            obs.eager_failure = describe_failure(e)
            return obs
        salt = uuid.uuid4().hex if case.warm_cache else ""  # the FX graph cache's key for this case alone
        compiled, failure, rec = _compile_and_run(case, len(eager.values), timings=timings, salt=salt)
        obs.selections, obs.post_grad_targets, obs.lowered = rec.selections, rec.post_grad_targets, rec.lowered
        obs.placements = rec.placements
        obs.compile_failure = failure
        if compiled is not None:
            obs.results = _checks(case, eager, compiled, references.of(kernel_model(case, obs.choices)))
        if case.warm_cache and compiled is not None:
            with timings.phase("warm-cache compile"):
                _check_warm_cache(case, obs, eager, references, timings, salt)
        if case.every_choice and failure is None:
            with timings.phase("single-choice compiles"):
                _check_every_choice(case, obs, eager, references, rec.padding)
    obs.timings = timings.seconds
    if ledger is not None:
        ledger.note(obs)
    return obs


def _eager(case: Case, timings: Timings) -> tuple[_Run, _References]:
    """Eager's outputs of every call, and the references of its inputs (raises what eager raises)."""
    eager = _Run()
    with timings.phase("eager and reference"):
        inputs = [materialize(case, specs) for specs in _calls(case)]
        wide = [[t.detach().double() for t in call] for call in inputs]  # before eager may mutate them
        for call in inputs:
            eager.add(programs.run(case, call), programs.split_inputs(case, call)[0])
    return eager, _References(case, wide, timings)


class _References:
    """float64 results and bounds of every call, per kernel model (computed once per model, on the
    case's device; handed to the oracles on the CPU)."""

    def __init__(self, case: Case, wide: list[list[torch.Tensor]], timings: Timings) -> None:
        self.case, self.wide, self.timings = case, wide, timings
        self._by_model: dict[KernelModel, list[programs.Expected]] = {}

    def of(self, model: KernelModel) -> list[programs.Expected]:
        if model not in self._by_model:
            with self.timings.phase("eager and reference"):
                self._by_model[model] = [_expected(self.case, call, model) for call in self.wide]
        return self._by_model[model]


def _expected(case: Case, wide: list[torch.Tensor], model: KernelModel) -> programs.Expected:
    """The float64 reference and bounds of one call, on the CPU; computed on the case's device,
    else on the CPU where the device is out of memory (workers sharing a GPU fill it at times)."""
    try:
        return _on_cpu(programs.expected(case, wide, model))
    except torch.OutOfMemoryError:
        release_device_memory()
        return programs.expected(case, [t.cpu() for t in wide], model)


def release_device_memory() -> None:
    """Give the GPU memory this process's allocator caches back to the device (for other workers)."""
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _on_cpu(expected: programs.Expected) -> programs.Expected:
    return programs.Expected([v.cpu() for v in expected.values], [b.cpu() for b in expected.bounds], expected.exact)


def _compile_and_run(case: Case, n_calls: int, keep: observe.KeepChoice | None = None,
                     timings: Timings | None = None, padding: dict[str, list[bool]] | None = None,
                     salt: str = "") -> tuple[_Run | None, Failure | None, observe.Recording]:
    """Compile the program in a fresh dynamo state and run every call; (outputs, failure, events).
    With `timings`, the time is split into inductor's phases (the rest is "compile and run"); with
    `padding`, pad-mm decides as in the compile that recorded it; with `salt`, inductor's FX graph
    cache is on, keyed by the salt (observe._post_grad_probe)."""
    inductor.init_freezing_patterns()
    inductor.reset_dynamo()  # also clears torch's compile-time metrics: `compiling` reads them after
    first_args, weights = programs.split_inputs(case, materialize(case))
    module = programs.Program(case, weights)
    warm = {"fx_graph_cache": True} if salt else {}  # a case's own config still decides
    patch = {**observe.LOWERING_SKIPPING_CACHES, **warm, **case.config_dict, "freezing": case.frozen_weights}
    timed = timings.compiling("compile and run") if timings else contextlib.nullcontext()
    with timed, inductor.config_patch(patch), observe.record_selections(case.device, keep, padding, salt) as rec:
        try:
            fn = torch.compile(module, dynamic=True if case.dynamic else None)  # None: static, then automatic
            run = _Run()
            for c, specs in enumerate(_calls(case)[:n_calls]):
                args = first_args if c == 0 else programs.split_inputs(case, materialize(case, specs))[0]
                for i, dim in case.mark_dynamic if c == 0 else ():
                    if i < len(args):
                        inductor.maybe_mark_dynamic(args[i], dim)
                run.add(programs.call(case, fn, args), args)
            if case.device == "cuda":
                torch.cuda.synchronize()
            return run, None, rec
        except Exception as e:  # noqa: BLE001 - a compile/run failure is an observation
            return None, describe_failure(e), rec


def _checks(case: Case, eager: _Run, compiled: _Run, expected: list[programs.Expected],
            choice: ChoiceRecord | None = None, via: str = "") -> list[OutputCheck]:
    out = []
    names = programs.output_labels(case)
    for c, exp in enumerate(expected[: len(compiled.values)]):
        outputs = zip(eager.values[c], compiled.values[c], exp.values, exp.bounds, exp.exact, names, strict=False)
        for j, (e, got, ref, bound, exact, name) in enumerate(outputs):
            label = f"call{c}/{name}" + (f" @{choice.template}" if choice else "") + via
            out.append(OutputCheck(label, e, got, ref, bound, exact, choice,
                                   eager.metas[c][j], compiled.metas[c][j], gradient=name.endswith(".grad")))
    return out


def _check_warm_cache(case: Case, obs: Observation, eager: _Run, references: _References, timings: Timings,
                      salt: str) -> None:
    """Compile the program again with the first compile's salt, so that it loads from the FX graph
    cache (`obs.warm_cache_hit` says whether it did), frozen on other weights (programs.warm_cache_values), and
    check its outputs; a failure there is the case's compile failure."""
    other = programs.warm_cache_values(case)
    if other != case:  # another model's weights: their own eager run and references
        try:
            eager, references = _eager(other, timings)
        except Exception:  # noqa: BLE001 - eager rejects these values (it ran the case's own): nothing to check
            return
    hits = observe.fx_graph_cache_hits()
    outputs, failure, _ = _compile_and_run(other, len(eager.values), salt=salt)
    obs.warm_cache_hit = observe.fx_graph_cache_hits() > hits
    if failure is not None:
        obs.compile_failure = dataclasses.replace(failure, message=f"from the FX graph cache: {failure.message}")
    elif outputs is not None:
        obs.results.extend(_checks(case, eager, outputs, references.of(kernel_model(other, obs.choices)),
                                   via=programs.OTHER_WEIGHTS if other != case else " (FX graph cache)"))


def single_choice_plan(selections: Sequence[SelectionEvent]) -> list[tuple[int, SelectionEvent, list[ChoiceRecord]]]:
    """(ordinal, selection, other choices) for each autotune selection of the first graph that
    offers several choices: its single-choice compiles keep that selection (and the same one of
    any recompiled graph) to one choice, while the program's other selections (a cat's or a
    chain's mm) still autotune over theirs, so their choices share in every output's error bound."""
    autotuned = [e for e in selections if e.source == "autotune"]
    ordinals = [sum(o.graph == e.graph for o in autotuned[:i]) for i, e in enumerate(autotuned)]
    return [(s, event, [c for e, o in zip(autotuned, ordinals, strict=True) if o != s for c in e.choices])
            for s, event in enumerate(e for e in autotuned if e.graph == 0) if len(event.choices) > 1]


def _check_every_choice(case: Case, obs: Observation, eager: _Run, references: _References,
                        padding: dict[str, list[bool]]) -> None:
    """Compile once per choice of every autotune selection, that choice alone (in the first graph
    and in any graph a later call recompiles), with the autotuned compile's pad-mm decisions (the
    same graph), run every call and check each output."""
    for s, event, others in single_choice_plan(obs.selections):
        for i, choice in enumerate(event.choices):
            keep = observe.KeepChoice.of(s, event.choices, i)
            outputs, failure, rec = _compile_and_run(case, len(eager.values), keep, padding=padding)
            if failure is not None and failure.beyond_hardware:  # autotuning skips it: a limit, not a crash
                obs.unavailable.append((choice, failure))
            elif failure is not None:
                obs.choice_failures.append((choice, failure))
            elif outputs is not None:
                if not rec.isolated:
                    obs.unisolated.append(choice)
                model = kernel_model(case, [choice, *others])
                obs.results.extend(_checks(case, eager, outputs, references.of(model), choice))
