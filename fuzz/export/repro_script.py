"""The standalone repro script itself: fuzz.export.repro_render writes this module's text (less this
docstring) after a header, with each repro's own values in place of the constants CASE_JSON to
TIMEOUT_S and of _VENDORED (the suite modules that run a case, vendored verbatim). Here in the
package nothing of it runs; the script needs only torch and the standard library."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import importlib.machinery
    from collections.abc import Iterator, Sequence
    from types import ModuleType

    from fuzz.run.session import Verdict

CASE_JSON = "{}"
EXPECTED = list[tuple[str, str]]()  # (oracle, signature) pairs whose reappearance means the bug is still there
PROCESS_DEATHS = list[str]()  # how the worker process died, for findings where it did
MODE = "oracle"
TIMEOUT_S = 600.0


REPRO_OK, REPRO_BUG, REPRO_UNCHECKABLE, REPRO_DIFFERENT = 0, 1, 2, 3  # the script's exit status
CUDA_UNUSABLE = 3  # the child's exit status (process mode) when the case left the CUDA context unusable
ATTEMPTS = 3  # a bug that reads memory it does not own can pass by chance: a pass is retried


def evaluate(times: int = 1) -> Iterator[Verdict]:
    """Run the case the way the suite does, `times` times in one session; yields each Verdict."""
    _install_vendored_modules()
    from fuzz.run.session import FuzzSession
    from strategies.case import Case

    session = FuzzSession()
    for _attempt in range(times):
        yield session.evaluate(Case.loads(CASE_JSON))


def check() -> int:
    import torch

    where = f"torch {torch.__version__}"
    others, misses = set(), 0
    for verdict in evaluate(ATTEMPTS):
        seen = list(verdict.violations) + [v for v, _ in verdict.known]
        hits = [v for v in seen if (v.oracle, v.signature) in EXPECTED]
        if hits:
            v = hits[0]
            print(f"BUG ({where}): [{v.severity}] {v.oracle} {v.signature}: {v.message}")
            return REPRO_BUG
        if verdict.rejected:
            failure = verdict.observation.eager_failure or verdict.observation.compile_failure
            assert failure is not None  # rejected: eager or the compile failed
            print(f"CANNOT CHECK ({where}): the case is rejected now: {failure.type}: {failure.message}")
            return REPRO_UNCHECKABLE
        others |= {f"{v.oracle} {v.signature}" for v in seen}
        misses += verdict.observation.warm_cache_hit is False  # its second compile did not load the first's graph
    expected = ", ".join(s for _, s in EXPECTED)
    if others:
        print(f"FAILS DIFFERENTLY ({where}): {expected} no longer reproduces, but the case fails with: "
              + ", ".join(sorted(others)))
        return REPRO_DIFFERENT
    if misses == ATTEMPTS:
        print(f"CANNOT CHECK ({where}): the case compiles its program again from inductor's FX graph cache, and in "
              f"{ATTEMPTS} runs that compile never loaded from it: a bug of the cached program cannot show")
        return REPRO_UNCHECKABLE
    print(f"FIXED ({where}): {expected} no longer reproduces and nothing else fails in {ATTEMPTS} runs")
    return REPRO_OK


def run_child() -> int:
    import faulthandler

    faulthandler.enable()
    (verdict,) = evaluate()
    if verdict.observation.case.device == "cuda":
        import torch

        try:
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - any error here means the context is gone
            print(f"the CUDA context is unusable after the case: {e}", file=sys.stderr)
            return CUDA_UNUSABLE
    return 0


def check_process() -> int:
    import signal
    import subprocess

    expected = ", ".join(PROCESS_DEATHS)
    try:
        code = subprocess.run([sys.executable, __file__, "--child"], check=False, timeout=TIMEOUT_S).returncode
    except subprocess.TimeoutExpired:
        print(f"BUG: the case hung for more than {TIMEOUT_S:g}s (found as: {expected})")
        return REPRO_BUG
    if code < 0:
        print(f"BUG: the case killed the process with {signal.Signals(-code).name} (found as: {expected})")
        return REPRO_BUG
    if code == CUDA_UNUSABLE:
        print(f"BUG: the case left the CUDA context unusable (found as: {expected})")
        return REPRO_BUG
    if code == 1:
        print("CANNOT CHECK: the child process raised (traceback above)")
        return REPRO_UNCHECKABLE
    if code != 0:
        print(f"BUG: the process exited with status {code} (found as: {expected})")
        return REPRO_BUG
    print(f"FIXED: the case ran to completion (found as: {expected})")
    return REPRO_OK


# ================================================================================================
# mm-autotune-fuzz, vendored verbatim: the modules that run a case and judge it.
# ================================================================================================

def _install_vendored_modules() -> None:
    import importlib.abc
    import importlib.util
    import linecache

    class VendoredModules(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
        def find_spec(self, name: str, path: Sequence[str] | None = None,
                      target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
            if name not in _VENDORED:
                return None
            return importlib.util.spec_from_loader(name, self, is_package=_VENDORED[name][0])

        def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
            return None

        def get_source(self, fullname: str) -> str:  # e.g. fuzz.probe.catalogue_cache runs a module's source
            return _VENDORED[fullname][1]

        def exec_module(self, module: ModuleType) -> None:
            source = _VENDORED[module.__name__][1]
            filename = f"<vendored {module.__name__}>"
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 - the suite's own modules

    sys.meta_path.insert(0, VendoredModules())


_VENDORED = dict[str, tuple[bool, str]]()  # module name -> (is a package, source)


if __name__ == "__main__":
    sys.exit(run_child() if sys.argv[1:] == ["--child"] else (check_process() if MODE == "process" else check()))
