"""Per-process fuzzing state (hash ledger, template catalogue) and case evaluation."""

from __future__ import annotations

import dataclasses
import re
import time

from fuzz.bugs.entry import EAGER_AGREES, KnownBug
from fuzz.bugs.known_bugs import KNOWN_BUGS, fitting
from fuzz.bugs.regions import with_aten
from fuzz.probe.catalogue_cache import shared_catalogue
from fuzz.run.harness import HashLedger, release_device_memory, run_case
from oracles import check_all
from oracles.model import REFERENCE_DIFFERS, Observation, Violation
from oracles.signature import VALUE_KINDS, Signature
from oracles.src_hash import is_triton
from oracles.templates import unservable
from strategies.case import Case


@dataclasses.dataclass
class Verdict:
    observation: Observation
    violations: list[Violation]  # unknown findings: these fail
    known: list[tuple[Violation, KnownBug]]  # known upstream bugs that still reproduce

    @property
    def rejected(self) -> bool:
        """The case is outside what the op accepts (eager raised) or no backend of its set can
        serve it (by the eligibility table): not a test of inductor."""
        return self.observation.eager_failure is not None or unservable(self.observation)


class FuzzSession:
    """State kept for the life of one worker process."""

    def __init__(self, registry: tuple[KnownBug, ...] = KNOWN_BUGS) -> None:
        self.ledger = HashLedger()
        self.registry = registry
        self._catalogue: dict[str, dict[str, str | None]] | None = None

    @property
    def catalogue(self) -> dict[str, dict[str, str | None]]:
        """Inductor's Triton templates as a fresh process sees them (read once per worker, or once
        per machine where workers share it: fuzz/probe/catalogue_cache.py)."""
        if self._catalogue is None:
            self._catalogue = shared_catalogue()
        return self._catalogue

    def _observe(self, case: Case) -> tuple[Observation, list[Violation]]:
        obs = run_case(case, ledger=self.ledger)
        if out_of_memory(obs):  # another worker on the GPU may hold what it needed: once more, with ours freed
            release_device_memory()
            obs = run_case(case, ledger=self.ledger)
        if any(is_triton(c.template) for c in obs.choices):
            obs.catalogue = self.catalogue
        began = time.perf_counter()
        violations = check_all(obs)
        obs.timings["oracles"] = time.perf_counter() - began
        return obs, violations

    def evaluate(self, case: Case) -> Verdict:
        """Run the case and every oracle; a violation a registered bug matches is known only if
        it is gone when the case runs again without that bug's trigger (where several bugs match,
        the first whose untriggered run no longer shows it: two bugs may share a case, each on its
        own output). A deviation eager shows the same way (REFERENCE_DIFFERS) is never new: a
        registered ATen bug's, else EAGER_AGREES."""
        obs, violations = self._observe(case)
        new, known = [], []
        untriggered: dict[tuple[str, bool], set[tuple[Signature, str]] | None] = {}
        checks = {c.label: c for c in obs.results}
        for violation in violations:
            explained = None
            alone = per_choice(violation)
            for bug in fitting(violation, case, obs.torch_version, self.registry, checks, len(obs.selections)):
                key = (bug.name, True) if (bug.name, True) in untriggered else (bug.name, alone)
                if key not in untriggered:
                    began = time.perf_counter()
                    untriggered[key] = self._failures_without(bug, case, alone)
                    spent = time.perf_counter() - began
                    obs.timings["known-bug re-runs"] = obs.timings.get("known-bug re-runs", 0.0) + spent
                remaining = untriggered[key]
                if remaining is not None and failure_of(violation) not in remaining:
                    explained = bug
                    break
            if explained is not None:
                known.append((violation, explained))
            elif violation.severity == REFERENCE_DIFFERS:
                known.append((violation, EAGER_AGREES))
            else:
                new.append(violation)
        return Verdict(obs, new, known)

    def _failures_without(self, bug: KnownBug, case: Case, alone: bool) -> set[tuple[Signature, str]] | None:
        """The failures (failure_of) the case shows with `bug`'s trigger removed, with `alone`
        every choice compiled alone too (whichever kernel wins autotuning); None when that
        variant does not run (nothing can be confirmed)."""
        variant = dataclasses.replace(bug.untrigger(case), every_choice=alone)
        obs, violations = self._observe(variant)
        if unservable(obs) and (served := with_aten(variant)) != variant:  # the bug struck before any choice
            # was gathered (a minimized case may have lost ATEN): as the strategies would, let ATen serve it
            variant = served
            obs, violations = self._observe(variant)
        if obs.eager_failure is not None or unservable(obs):
            return None
        failures = {failure_of(v) for v in violations}
        return failures | {(k.without_choice(), out) for k, out in failures}  # an autotuned result: any choice's


def failure_of(violation: Violation) -> tuple[Signature, str]:
    """What removing a trigger must remove: the kind of failure (failure_kind) and the output it
    was seen on, whichever choice computed it (a single-choice compile's " @TEMPLATE" left out)."""
    return failure_kind(violation.parsed), re.sub(r" @\S+", "", violation.output)


def per_choice(violation: Violation) -> bool:
    """Whether a single choice's kernel may cause the violation (its outputs: values, metadata,
    a choice's crash), so that the untriggered re-run must compile every choice alone to show it
    whichever choice wins; the other oracles judge the autotuned compile alone (its crash, the
    selection's layout, the templates' hashes), which single-choice compiles never add to."""
    return violation.oracle == "numerics"


def out_of_memory(obs: Observation) -> bool:
    """The case ran out of device memory somewhere (eager, compile and run, a single choice)."""
    failures = [obs.eager_failure, obs.compile_failure, *(f for _, f in obs.choice_failures)]
    return any(f is not None and f.type == "OutOfMemoryError" for f in failures)


def failure_kind(signature: Signature) -> Signature:
    """A signature without what removing a trigger changes besides the bug: the value mode's way
    of judging values (exact, bound, NaN) and whether eager showed it too."""
    if signature.kind in VALUE_KINDS:
        return dataclasses.replace(signature, kind="wrong-value", eager_agrees=False)
    return signature
