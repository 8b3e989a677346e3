"""Run one Case: materialize inputs, run eager, compile with max-autotune under the case's config
in a fresh dynamo state while the observer records template selection, compute float64
references and error bounds. Returns an Observation for the oracles; never raises for a case."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from fuzz import programs
from fuzz.values import EXACT_BITS, EXACT_SCALARS, materialize
from oracles import observe
from oracles.model import ChoiceRecord, Failure, Observation, OutputCheck
from oracles.numerics import op_bound
from strategies.case import Case, TensorSpec

INEXACT_CONSUMERS = frozenset(name for name, step in programs.CONSUMERS.items() if not step.exact)


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
def _tf32(enabled: bool) -> Iterator[None]:
    prior = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prior


def _calls(case: Case) -> list[Sequence[TensorSpec]]:
    return [case.inputs] + ([case.second_call] if case.second_call else [])


def _cpu(outputs: Any) -> list[torch.Tensor]:
    return [t.detach().cpu() for t in outputs]


def run_case(case: Case, *, ledger: HashLedger | None = None) -> Observation:
    """Compile and run `case`; every failure is recorded in the Observation, never raised."""
    obs = Observation(case=case, torch_version=torch.__version__)
    grad = torch.no_grad() if case.frozen_weights else contextlib.nullcontext()
    with _tf32(case.tf32), grad:
        try:
            inputs = [materialize(case, specs) for specs in _calls(case)]
            wide = [[t.detach().cpu().double() for t in call] for call in inputs]  # before eager may mutate them
            eager = [_cpu(programs.run(case, call)) for call in inputs]
        except Exception as e:  # noqa: BLE001 - the op rejects the case: recorded, not a finding
            obs.eager_failure = observe.describe_failure(e)
            return obs
        expected = [_expected(case, specs, call) for specs, call in zip(_calls(case), wide)]
        compiled, failure, rec = _compile_and_run(case, len(expected))
        obs.selections, obs.post_grad_targets, obs.lowered = rec.selections, rec.post_grad_targets, rec.lowered
        obs.compile_failure = failure
        if compiled is not None:
            obs.results = _checks(case, eager, compiled, expected)
        if case.every_choice and failure is None:
            _check_every_choice(case, obs, eager[0], expected[0])
    if ledger is not None:
        ledger.note(obs)
    return obs


def _compile_and_run(case: Case, n_calls: int, keep: tuple[int, int] | None = None,
                     ) -> tuple[list[list[torch.Tensor]] | None, Failure | None, observe.Recording]:
    """Compile the program in a fresh dynamo state and run every call; (outputs, failure, events)."""
    torch._dynamo.reset()
    first_args, weights = programs.split_inputs(case, materialize(case))
    module = programs.Program(case, weights)
    patch = {**observe.LOWERING_SKIPPING_CACHES, **case.config_dict, "freezing": case.frozen_weights}
    with torch._inductor.config.patch(patch), observe.record_selections(case.device, keep) as rec:
        try:
            fn = torch.compile(module, dynamic=True if case.dynamic else None)  # None: static, then automatic
            outputs = []
            for c, specs in enumerate(_calls(case)[:n_calls]):
                args = first_args if c == 0 else programs.split_inputs(case, materialize(case, specs))[0]
                for i, dim in case.mark_dynamic if c == 0 else ():
                    if i < len(args):
                        torch._dynamo.mark_dynamic(args[i], dim)
                outputs.append(_cpu(fn(*args)))
            if case.device == "cuda":
                torch.cuda.synchronize()
            return outputs, None, rec
        except Exception as e:  # noqa: BLE001 - a compile/run failure is an observation
            return None, observe.describe_failure(e), rec


def _expected(case: Case, specs: Sequence[TensorSpec], wide: list[torch.Tensor]) -> programs.Expected:
    """float64 results and bounds of one call, from float64 copies of its inputs."""
    dtype = getattr(torch, programs.op_dtype(case))
    return programs.expected(case, wide, op_bound(specs[0].shape[-1], dtype, case.tf32))  # K of this call


def _exact(case: Case, expected: programs.Expected, eager: list[torch.Tensor]) -> bool:
    """Exact-integer inputs whose largest partial sum fits every dtype on the way, exact steps only."""
    if case.value_mode != "exact_int" and case.op != "int_mm":
        return False
    dtypes = [programs.op_dtype(case)] + [str(t.dtype).removeprefix("torch.") for t in eager]
    bits = min(EXACT_BITS.get(d, 0) for d in dtypes)
    return (expected.peak_magnitude <= 2.0 ** (bits - 1) and not INEXACT_CONSUMERS & set(case.consumers)
            and all(v in EXACT_SCALARS for v in case.params_dict.values()))


def _checks(case: Case, eager: list[list[torch.Tensor]], compiled: list[list[torch.Tensor]],
            expected: list[programs.Expected], choice: ChoiceRecord | None = None) -> list[OutputCheck]:
    out = []
    for c, (e_outs, c_outs, exp) in enumerate(zip(eager, compiled, expected)):
        exact = _exact(case, exp, e_outs)
        for j, (e, got, ref, bound) in enumerate(zip(e_outs, c_outs, exp.values, exp.bounds)):
            label = f"call{c}/out{j}" + (f" @{choice.template}" if choice else "")
            out.append(OutputCheck(label, e, got, ref, bound, exact, choice))
    return out


def _check_every_choice(case: Case, obs: Observation, eager: list[torch.Tensor],
                        expected: programs.Expected) -> None:
    """Compile once per choice of every autotune selection, that choice alone, and check it."""
    selections = [e for e in obs.selections if e.source == "autotune"]
    for s, event in enumerate(selections):
        if len(event.choices) < 2:
            continue  # the autotuned compile already ran its only choice
        for i, choice in enumerate(event.choices):
            outputs, failure, _ = _compile_and_run(case, 1, keep=(s, i))
            if failure is not None:
                obs.choice_failures.append((choice, failure))
            elif outputs is not None:
                obs.results.extend(_checks(case, [eager], outputs, [expected], choice))
