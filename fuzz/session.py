"""Per-process fuzzing state (hash ledger, template catalogue) and case evaluation."""

from __future__ import annotations

import dataclasses

from fuzz.harness import HashLedger, run_case
from fuzz.known_bugs import KnownBug, split_known
from oracles import check_all
from oracles.model import Observation, Violation
from oracles.observe import template_catalogue
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

    def __init__(self) -> None:
        self.ledger = HashLedger()
        self._catalogue: dict[str, dict[str, str | None]] | None = None

    @property
    def catalogue(self) -> dict[str, dict[str, str | None]]:
        """Inductor's Triton templates as a fresh process sees them (computed once per worker)."""
        if self._catalogue is None:
            self._catalogue = template_catalogue()
        return self._catalogue

    def evaluate(self, case: Case) -> Verdict:
        obs = run_case(case, ledger=self.ledger)
        if any(is_triton(c.template) for c in obs.choices):
            obs.catalogue = self.catalogue
        new, known = split_known(check_all(obs), case, obs.torch_version)
        return Verdict(obs, new, known)
