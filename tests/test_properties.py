"""Property tests: every generated case passes every oracle (layout, numerics, src_hash, observed)."""

from __future__ import annotations

import pytest
from hypothesis import given

from strategies.cases import cases
from tests.checking import assert_case_passes


@pytest.mark.parametrize("op", ["mm", "addmm", "bmm"])
def test_op_passes_all_oracles(op, fuzz_session, request):  # type: ignore[no-untyped-def]
    @given(case=cases(op=op))
    def check(case):  # type: ignore[no-untyped-def]
        assert_case_passes(case, fuzz_session, request)

    check()
