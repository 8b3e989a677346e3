"""One parser for the GEMM backend set and one eligibility table (issue 30, item 3)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from strategies.backends import DEFAULT_BACKENDS, config_backends, join_backends, parse_backends
from strategies.case import Case, TensorSpec
from strategies.cases import _may_serve, cases


def test_parse_backends_normalizes() -> None:
    assert parse_backends(" aten, cpp,,ATEN ") == ("ATEN", "CPP")
    assert parse_backends("") == ()
    assert config_backends({}) == parse_backends(DEFAULT_BACKENDS) == ("ATEN", "TRITON", "CPP")
    assert config_backends({"max_autotune_gemm_backends": "TRITON,CPP"}) == ("TRITON", "CPP")
    assert join_backends(["ATEN", "CPP", "ATEN"]) == "ATEN,CPP"


def test_the_strategies_read_the_oracles_table() -> None:
    """A CPP-only bmm: the table (oracles.templates) wants a positive product on the CPU (its stride
    rules are read as met: the case's strides need not be the selection's)."""
    case = Case.loads('{"op": "bmm", "device": "cpu", "config": {}, "inputs": ['
                      '{"shape": [2, 3, 4], "stride": [12, 4, 1], "offset": 0, "dtype": "float32"},'
                      '{"shape": [2, 4, 5], "stride": [20, 5, 1], "offset": 0, "dtype": "float32"}]}')
    inputs = list(case.inputs)
    assert _may_serve("CPP", "bmm", "cpu", False, inputs, False)
    empty = [TensorSpec((2, 0, 4), (0, 4, 1), 0, "float32"), inputs[1]]
    assert not _may_serve("CPP", "bmm", "cpu", False, empty, False)
    assert not _may_serve("CPP", "baddbmm", "cpu", False, inputs, False)
    assert not _may_serve("TRITON", "bmm", "cpu", False, inputs, False)


@settings(max_examples=300, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases(device="cuda"))
def test_a_drawn_backend_set_serves_its_case(case: Case) -> None:
    backends = config_backends(case.config_dict)
    capped = "test_configs.max_mm_configs" in case.config_dict
    assert "ATEN" in backends or any(
        _may_serve(b, case.op, case.device, case.frozen_weights, list(case.inputs), capped) for b in backends)
