"""A driver's stream of cases, which the seed alone decides, and the position of a case in it.

Each driver explores its **stream**: Hypothesis rounds of the profile's `max_examples` cases of
the `@given(cases(...))` test `_campaign_case`, round r seeded with derive_seed(campaign seed,
session, driver, r). Nothing flows back from the cases into Hypothesis while it explores (the test
body never fails, rejects or targets, and the example database is not read), so the stream is a
function of (seed, session, driver): timing, verdicts, claims and other drivers or hosts change
only how much of it runs. Every sighting records its position (round, index) in the stream, and
`regenerate` draws that case again (`python -m fuzz.engine.regenerate FINDING.json`). Exploring,
shrinking (fuzz.engine.driver) and regenerating all run `stream_test`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib
import json
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

from strategies.backends import config_backends


def derive_seed(*parts: object) -> int:
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:15], 16)


def backends_of(case_json: dict[str, Any]) -> set[str]:
    return set(config_backends(case_json.get("config", {})))


def case_strategy(device: str, ops: list[str], backends: list[str], dtypes: list[str]) -> Any:
    """`cases()` of `ops` on `device`, restricted by the campaign's filters. (The ops are given:
    letting `cases` ask torch which ops a GPU runs would initialize CUDA in the driver.)"""
    from hypothesis import strategies as st

    from strategies.cases import cases

    strategy = st.one_of([cases(op=op, device=device) for op in ops])
    if backends:
        allowed = set(backends)
        strategy = strategy.filter(lambda c: backends_of(c.to_json()) <= allowed)
    if dtypes:
        strategy = strategy.filter(lambda c: c.inputs[0].dtype in dtypes)
    return strategy


def stream_strategy(stream: dict[str, Any]) -> Any:
    """The strategy of a stream as a sighting's origin records it (device, ops and filters)."""
    return case_strategy(stream["device"], stream["ops"], stream["backends"], stream["dtypes"])


class EndRun(BaseException):
    """The budget is spent (or the coordinator asked to stop, or the wanted case is drawn): end the Hypothesis run."""


@dataclasses.dataclass
class _Run:
    body: Callable[[Any], None]


_ACTIVE: _Run | None = None


# Hypothesis keys the example database by this function's source: keep it as it is.
def _campaign_case(case: Any) -> None:
    """The campaign's Hypothesis test (one function, so its example-database key is stable across
    drivers and hosts): run the case in the isolated worker and report what it found."""
    assert _ACTIVE is not None
    _ACTIVE.body(case)


@contextlib.contextmanager
def running(body: Callable[[Any], None]) -> Iterator[None]:
    """`_campaign_case` calls `body` meanwhile."""
    global _ACTIVE
    _ACTIVE = _Run(body)
    try:
        yield
    finally:
        _ACTIVE = None


@functools.cache
def pin_local_constants() -> None:
    """Hypothesis (6.131 on) mixes the literals of every local module imported so far into what it
    draws, so a stream would depend on what its process had imported by then (a driver imports
    fuzz.engine.minimize at its first shrink; `regenerate` runs in another process), and so would a
    derandomized test on the tests its xdist worker ran before. Pin that pool to the literals of the
    `strategies` package, which a stream depends on anyway."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants, constants_from_module
    except ImportError:  # a Hypothesis that draws no local constants
        return
    import strategies

    pool = Constants()
    for info in sorted(pkgutil.iter_modules(strategies.__path__), key=lambda m: m.name):
        pool |= constants_from_module(importlib.import_module(f"strategies.{info.name}"))
    assert hasattr(providers, "_get_local_constants"), "Hypothesis draws local constants some other way now"
    providers._get_local_constants = lambda: pool
    providers.CONSTANTS_CACHE.cache.clear()


def stream_test(strategy: Any, seed: int, max_examples: int, phases: tuple[Any, ...],
                database: Any = None) -> Callable[[], None]:
    """A Hypothesis run of `_campaign_case`: exploring, shrinking and regenerating all use this, so
    that a round's first cases are the same in each (only `phases` and `database` may differ)."""
    from hypothesis import HealthCheck, Verbosity, given, settings
    from hypothesis import seed as with_seed

    pin_local_constants()

    # `seed` replaces the test's settings with database=None: the settings go on last, outermost
    return settings(max_examples=max_examples, database=database, deadline=None, derandomize=False, phases=phases,
                    verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False,
                    suppress_health_check=list(HealthCheck))(with_seed(seed)(given(case=strategy)(_campaign_case)))


def regenerate(origin: dict[str, Any]) -> dict[str, Any]:
    """The case a sighting's `origin` names (seed, session, worker, round, index in the worker's
    stream), drawn again: its Case.to_json(). ValueError when the origin names no stream position."""
    from hypothesis import Phase

    if origin.get("phase") != "explore":
        raise ValueError(f"not drawn by a campaign's stream (phase {origin.get('phase', 'not recorded')})")
    stream, index = origin["stream"], int(origin["index"])
    drawn: list[dict[str, Any]] = []

    def body(case: Any) -> None:
        if len(drawn) == index:
            drawn.append(case.to_json())
            raise EndRun
        drawn.append({})

    seed = derive_seed(origin["seed"], origin["session"], origin["worker"], origin["round"])
    with running(body), contextlib.suppress(EndRun):
        stream_test(stream_strategy(stream), seed, int(stream["max_examples"]), (Phase.generate,))()
    if len(drawn) <= index:
        raise ValueError(f"round {origin['round']} ends after {len(drawn)} case(s), before case {index}")
    return drawn[index]


def fingerprint(case_json: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(case_json, sort_keys=True).encode()).hexdigest()
