"""Property tests: every generated case of every mm-family op the device runs passes every oracle
(layout soundness and spec, template presence, numerics of the autotuned and of every single
choice, src_hash, observed, crash), and at most a tenth of them are rejected (conftest.py checks
that after the Hypothesis run). `@given` is on the test itself, so pytest's Hypothesis plugin
reports it (--hypothesis-show-statistics), each op has its own example-database key, and tools
that drive Hypothesis tests (e.g. HypoFuzz) can collect it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strategies.cases import cases, default_device, ops_for
from tests.checking import assert_case_passes


@pytest.mark.slow
@pytest.mark.reject_ceiling
@pytest.mark.parametrize("op", ops_for(default_device()))
@given(data=st.data())
def test_op_passes_all_oracles(op, fuzz_session, request, data):  # type: ignore[no-untyped-def]
    assert_case_passes(data.draw(cases(op=op), label="case"), fuzz_session, request)
