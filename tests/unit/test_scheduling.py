"""xdist hands the slowest-first order out two tests at a time (conftest.XDIST_CHUNK)."""

from __future__ import annotations

import pytest

from conftest import XDIST_CHUNK


def test_xdist_hands_out_small_chunks_unless_told_otherwise(pytestconfig: pytest.Config) -> None:
    if any(arg.startswith("--maxschedchunk") for arg in pytestconfig.invocation_params.args):
        pytest.skip("the command line gives --maxschedchunk")
    assert pytestconfig.option.maxschedchunk == XDIST_CHUNK
