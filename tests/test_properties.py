"""Property tests: every generated case of every mm-family op the device runs passes every oracle
(layout soundness and spec, template presence, numerics of the autotuned and of every single
choice, src_hash, observed, crash), and few of them are rejected."""

from __future__ import annotations

import pytest
from hypothesis import given

from strategies.cases import cases, default_device, ops_for
from tests.checking import assert_case_passes, assert_reject_rate_within_ceiling


@pytest.mark.parametrize("op", ops_for(default_device()))
def test_op_passes_all_oracles(op, fuzz_session, request):  # type: ignore[no-untyped-def]
    @given(case=cases(op=op))
    def check(case):  # type: ignore[no-untyped-def]
        assert_case_passes(case, fuzz_session, request)

    check()
    assert_reject_rate_within_ceiling(op)
