"""What one outcome shows: every finding a case's run produced (the worker's own death, new
violations, violations a registered upstream bug explains), as Finding records of count 1.

Used by the campaign's drivers and by `replay`."""

from __future__ import annotations

from typing import Any

from fuzz.engine.executor import Outcome
from fuzz.store.findings import PROCESS_ORACLE, Finding, record_from_violation


def _known_death(case_json: dict[str, Any], death: dict[str, str], env: dict[str, Any]) -> dict[str, str] | None:
    """The registered bug (name, tracking) that explains a worker's death on this case, if any."""
    from fuzz.bugs.known_bugs import candidates
    from oracles.model import Violation
    from strategies.case import Case, CaseError

    try:
        case = Case.from_json(case_json)
    except CaseError:
        return None
    [(_, bug)] = candidates([Violation(**death)], case, str(env.get("torch", "")))
    return {"name": bug.name, "tracking": bug.tracking} if bug else None


def sightings(case_json: dict[str, Any], outcome: Outcome, env: dict[str, Any],
              origin: dict[str, Any]) -> list[Finding]:
    """Every finding one outcome shows: the worker's own death, new violations, known bugs."""
    verdict = outcome.verdict or {"violations": [], "known": []}
    every = verdict["violations"] + [k["violation"] for k in verdict["known"]]
    records = []
    if outcome.death is not None:
        death = {"oracle": PROCESS_ORACLE, "severity": "crash", "signature": f"{outcome.death}:{case_json['op']}",
                 "message": f"{case_json['op']}: {outcome.detail}"}
        records.append(record_from_violation(death, case_json, known_bug=_known_death(case_json, death, env),
                                             violations=[death, *every],
                                             versions=env, origin=origin, traceback=outcome.last_words))
    failure = verdict.get("failure")
    raised = f"{failure['type']}: {failure['message']} (innermost inductor frame: {failure['frame'] or '-'})" \
        if failure else None  # what the harness keeps of a compile-time exception
    for v, bug in [(v, None) for v in verdict["violations"]] + [(k["violation"], k["bug"]) for k in verdict["known"]]:
        records.append(record_from_violation(v, case_json, known_bug=bug, violations=every, versions=env,
                                             origin=origin, traceback=raised if v["oracle"] == "crash" else None))
    return records


def rejected(outcome: Outcome) -> bool:
    """The case is outside what the op or the backend set accepts (or the Case model refused it)."""
    return bool(outcome.invalid or (outcome.verdict is not None and outcome.verdict["rejected"]))
