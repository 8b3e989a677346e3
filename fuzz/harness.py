"""Run one Case: materialize inputs, run eager, compile with max-autotune under the case's config
in a fresh dynamo state while the observer records template selection, compute a float64
reference. Returns an Observation for the oracles."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from fuzz import programs
from fuzz.values import EXACT_BITS, EXACT_SCALARS, materialize, reduction_size
from oracles import observe
from oracles.model import Observation
from strategies.case import Case


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


def run_case(case: Case, *, ledger: HashLedger | None = None,
             catalogue: dict[str, dict[str, str | None]] | None = None) -> Observation:
    """Compile and run `case`; every failure is recorded in the Observation, never raised."""
    obs = Observation(case=case, catalogue=catalogue or {}, torch_version=torch.__version__, tf32=case.tf32,
                      program_ops=(programs.ATEN_OPS[case.op],), reduction_size=reduction_size(case))
    tensors = materialize(case)
    args, weights = programs.split_inputs(case, tensors)
    grad = torch.no_grad() if case.frozen_weights else contextlib.nullcontext()
    with _tf32(case.tf32), grad:
        try:
            obs.eager = programs.apply(case, tensors).cpu()
        except Exception as e:  # noqa: BLE001 - the op rejects the case: recorded, not a finding
            obs.eager_failure = observe.describe_failure(e)
            return obs
        _reference(case, tensors, obs)
        torch._dynamo.reset()
        module = programs.Program(case, weights)
        patch = {**observe.LOWERING_SKIPPING_CACHES, **case.config_dict, "freezing": case.frozen_weights}
        with torch._inductor.config.patch(patch), observe.record_selections(case.device) as rec:
            try:
                out = torch.compile(module, dynamic=case.dynamic)(*args)
                if case.device == "cuda":
                    torch.cuda.synchronize()
                obs.compiled = out.cpu()
            except Exception as e:  # noqa: BLE001 - a compile/run failure is an observation
                obs.compile_failure = observe.describe_failure(e)
    obs.selections, obs.post_grad_targets = rec.selections, rec.post_grad_targets
    if ledger is not None:
        ledger.note(obs)
    return obs


def _reference(case: Case, tensors: list[torch.Tensor], obs: Observation) -> None:
    """float64 result, and sum |terms| (the scale of rounding error); marks provably exact cases."""
    wide = [t.detach().cpu().double() for t in tensors]
    obs.reference = programs.apply(case, wide)
    obs.magnitude = programs.apply(case, [w.abs() for w in wide], {k: abs(v) for k, v in case.params_dict.items()})
    if case.value_mode == "exact_int":
        bits = min(EXACT_BITS[t.dtype] for t in case.inputs)
        limit = 2.0 ** (bits - 1)  # one spare bit for alpha/beta halves
        obs.exact = bool(obs.magnitude.numel() == 0 or obs.magnitude.max().item() <= limit) and all(
            v in EXACT_SCALARS for v in case.params_dict.values())
