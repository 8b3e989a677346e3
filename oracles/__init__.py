"""Oracles: pure functions `check(observation) -> list[Violation]`."""

from __future__ import annotations

from collections.abc import Callable

from oracles import layout, numerics, observed, src_hash, templates
from oracles.model import Observation, Violation

ORACLES: dict[str, Callable[[Observation], list[Violation]]] = {
    "layout_soundness": layout.check_soundness,
    "layout_spec": layout.check_spec,
    "numerics": numerics.check,
    "src_hash": src_hash.check,
    "template_presence": templates.check,
    "observed": observed.check_observed,
    "crash": observed.check_crash,
}


def check_all(obs: Observation) -> list[Violation]:
    """Every oracle's violations for one observation."""
    return [v for check in ORACLES.values() for v in check(obs)]
