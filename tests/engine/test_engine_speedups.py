"""The campaign engine's speed-ups keep what the oracles see: workers share one template
catalogue per installed inductor (recomputed when it changes or the stored copy is unreadable)
and one code cache per machine, CPP benchmark modules compile with the precompiled header and
still fail on broken C++, the workers of one GPU time kernels one at a time, workers are forked
from a zygote that paid the imports once (and deaths still read as before), a C++ compile that
failed is not run again, modules link with gold (and a link only gold fails runs inductor's own
command), compiles skip dynamo's guard-latency sample (the guards still hold), kernel templates
are parsed once and render the same kernels, and the bench's utilization sampler sees a busy core."""

from __future__ import annotations

import inspect
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from fuzz.engine import machine
from fuzz.engine.children import REPO_ROOT
from fuzz.engine.executor import Executor
from fuzz.engine.zygote import ForkedProcess, cuda_driver_path
from fuzz.probe import catalogue_cache, speedups
from fuzz.run.session import FuzzSession
from fuzz.tools.utilization import Utilization
from tests.cases import frozen_cpp_mm
from tests.checking import is_cpp_choice, rig_benchmarks

CATALOGUE = {"triton::mm": {"src_hash": "a" * 64, "source_sha256": "a" * 64}}


def counting_catalogue(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    reads: list[int] = []
    monkeypatch.setenv(catalogue_cache.CATALOGUE_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(catalogue_cache, "template_catalogue", lambda: reads.append(1) or CATALOGUE)
    return reads


def test_workers_share_one_catalogue_per_installed_inductor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    reads = counting_catalogue(monkeypatch, tmp_path)
    assert catalogue_cache.shared_catalogue() == CATALOGUE
    assert catalogue_cache.shared_catalogue() == CATALOGUE and len(reads) == 1  # the second worker loads it
    monkeypatch.setattr(catalogue_cache, "inductor_fingerprint", lambda: "edited-inductor")
    assert catalogue_cache.shared_catalogue() == CATALOGUE and len(reads) == 2  # another inductor: read again


def test_an_unreadable_stored_catalogue_is_read_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    reads = counting_catalogue(monkeypatch, tmp_path)
    stored = tmp_path / f"catalogue-{catalogue_cache.inductor_fingerprint()}.json"
    stored.write_text('{"triton::mm": ')  # a worker killed mid-write by hand, say
    assert catalogue_cache.shared_catalogue() == CATALOGUE and len(reads) == 1
    assert json.loads(stored.read_text()) == CATALOGUE


def test_without_the_shared_directory_each_process_reads_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(catalogue_cache.CATALOGUE_DIR_ENV, raising=False)
    reads: list[int] = []
    monkeypatch.setattr(catalogue_cache, "template_catalogue", lambda: reads.append(1) or CATALOGUE)
    catalogue_cache.shared_catalogue(), catalogue_cache.shared_catalogue()
    assert len(reads) == 2


def test_the_fingerprint_follows_the_installed_inductor_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    first = catalogue_cache.inductor_fingerprint()
    assert first == catalogue_cache.inductor_fingerprint()
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    assert catalogue_cache.inductor_fingerprint() != first


def compile_commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from torch._inductor import cpp_builder

    commands: list[str] = []
    real = cpp_builder._run_compile_cmd
    monkeypatch.setattr(cpp_builder, "_run_compile_cmd", lambda cmd, cwd: commands.append(cmd) or real(cmd, cwd))
    return commands


def fresh_code_caches(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    """Inductor's C++ code caches in `cache_dir`, none of this process's compiled modules in memory."""
    from torch._inductor import codecache

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache_dir))
    for cache in (codecache.CppCodeCache, codecache.CppPythonBindingsCodeCache):
        monkeypatch.setattr(cache, "cache", {})


def header_hook_on_fresh_caches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Install the benchmark-header hook (undone after the test) with inductor's C++ caches empty."""
    from torch._inductor import codecache

    monkeypatch.setattr(codecache.CppCodeCache, "_get_uncompiled_header",
                        codecache.CppCodeCache.__dict__["_get_uncompiled_header"])
    fresh_code_caches(monkeypatch, tmp_path)  # compile everything afresh
    assert speedups.precompile_benchmark_headers()


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_cpp_benchmark_modules_compile_with_the_precompiled_header(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    from torch._inductor import codecache

    header_hook_on_fresh_caches(monkeypatch, tmp_path)
    assert speedups.precompile_benchmark_headers()  # idempotent
    assert codecache.CppCodeCache._get_uncompiled_header("cpu") == "torch/csrc/inductor/cpp_prefix.h"
    assert codecache.CppPythonBindingsCodeCache._get_uncompiled_header("cpu") == "torch/csrc/inductor/cpp_prefix.h"
    assert codecache.CppWrapperCodeCache._get_uncompiled_header("cpu") != "torch/csrc/inductor/cpp_prefix.h"
    commands = compile_commands(monkeypatch)
    verdict = FuzzSession().evaluate(frozen_cpp_mm())
    assert not verdict.rejected and verdict.violations == []
    assert any("Cpp" in c.template_class for c in verdict.observation.choices), verdict.observation.choices
    benchmark_modules = [c for c in commands if c.split()[1].endswith(".main.cpp")
                         and "PyInit_" not in Path(c.split()[1]).read_text()]
    assert benchmark_modules and all("precompiled_headers" in c for c in benchmark_modules), benchmark_modules


def test_a_cpp_choice_whose_code_does_not_compile_is_still_dropped_with_the_header(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from torch._inductor import autotune_process

    header_hook_on_fresh_caches(monkeypatch, tmp_path)
    real = autotune_process.CppBenchmarkRequest.__init__

    def broken(self: autotune_process.CppBenchmarkRequest, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)
        self.source_code += "\nint broken_on_purpose = undeclared_name;\n"

    monkeypatch.setattr(autotune_process.CppBenchmarkRequest, "__init__", broken)
    found = {v.signature for v in FuzzSession().evaluate(frozen_cpp_mm()).violations}
    assert any(s.startswith("dropped:") and "CppTemplateCaller" in s for s in found), found


def compiler_runs(monkeypatch: pytest.MonkeyPatch, outcome: object = None) -> list[str]:
    """Count the compiles that reach `_run_compile_cmd` under the failure memory (installed here,
    undone after the test); `outcome`, if given, replaces the compiler (an exception to raise)."""
    from torch._inductor import cpp_builder

    runs: list[str] = []
    real = cpp_builder._run_compile_cmd

    def run(cmd: str, cwd: str) -> None:
        runs.append(cmd)
        if outcome is not None:
            raise outcome
        real(cmd, cwd)

    monkeypatch.setattr(cpp_builder, "_run_compile_cmd", run)
    assert speedups.remember_compile_failures()
    assert speedups.remember_compile_failures()  # idempotent: one layer
    return runs


BROKEN_CHOICE_IN_A_FRESH_WORKER = """
import json, re, sys
from pathlib import Path
from torch._inductor import autotune_process, cpp_builder
from fuzz.probe import speedups
from fuzz.run.session import FuzzSession
from tests.cases import frozen_cpp_mm

real_init, real_run, failing = autotune_process.CppBenchmarkRequest.__init__, cpp_builder._run_compile_cmd, []

def broken(self, *args, **kwargs):  # the planted bug: the CPP choice's benchmark module does not compile
    real_init(self, *args, **kwargs)
    self.source_code += "\\nint broken_on_purpose = undeclared_name;\\n"

def run(cmd, cwd):  # every compile that reaches the compiler, under the failure memory
    source = Path(cwd, cmd.split()[1])
    if source.suffix == ".cpp" and "undeclared_name" in source.read_text():
        failing.append(str(source))
    real_run(cmd, cwd)

autotune_process.CppBenchmarkRequest.__init__ = broken
cpp_builder._run_compile_cmd = run
assert speedups.precompile_benchmark_headers() and speedups.remember_compile_failures()
violations = FuzzSession().evaluate(frozen_cpp_mm()).violations
print(json.dumps({"verdict": sorted([v.signature, re.sub(r"_\\d+ ", " ", v.message)] for v in violations),
                  "failing": failing}))
"""


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_a_choice_that_failed_to_compile_fails_again_without_the_compiler_and_the_same_verdict(tmp_path: Path) -> None:
    """Two fresh workers on one code cache meet the same broken CPP choice: the first runs the
    compiler on it, the second gets the same failure without the compiler, and the same verdict
    (messages number kernels per process: the numbers are left out)."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "PYTHONPATH": str(REPO_ROOT)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", BROKEN_CHOICE_IN_A_FRESH_WORKER], env=env, cwd=REPO_ROOT,
                                      check=True, capture_output=True, text=True).stdout.splitlines()[-1])
            for _ in range(2)]
    assert any(s.startswith("dropped:") and "CppTemplateCaller" in s for s, _ in runs[0]["verdict"]), runs[0]
    assert runs[1]["verdict"] == runs[0]["verdict"]
    assert len(runs[0]["failing"]) == len(set(runs[0]["failing"])) >= 1, runs[0]  # each broken module compiled once
    assert runs[1]["failing"] == [], runs[1]  # and never again


def remembered(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, output: str) -> tuple[list[str], list[str]]:
    """Compile one source file twice through the memory with a compiler that fails with `output`;
    the runs of its runner (the compiler, or a replay: `compiles`) and the errors raised."""
    from torch._inductor import cpp_builder, exc

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    source = tmp_path / "kernel.cpp"
    source.write_text("int f() { return undeclared_name; }\n")
    command = f"g++ {source} -O3 -shared -o {tmp_path / 'kernel.so'}"
    runs = compiler_runs(monkeypatch, exc.CppCompileError(command.split(), output))
    errors = []
    for _ in range(2):
        with pytest.raises(exc.CppCompileError) as raised:
            cpp_builder._run_compile_cmd(command, str(tmp_path))
        errors.append(str(raised.value))
    return runs, errors


def compiles(runs: list[str]) -> list[str]:
    """The runs that reached the compiler (a remembered failure's replay runs `sh`)."""
    return [r for r in runs if not r.startswith("sh -c")]


def test_a_remembered_failure_has_the_real_ones_cause_frame_and_signature(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """The real compiler's failure and its replay describe the same (CalledProcessError in
    cpp_builder's _run_compile_cmd): a campaign worker's finding and its fresh repro agree."""
    from torch._inductor import cpp_builder, exc

    from fuzz.probe.failures import describe_failure

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    (tmp_path / "kernel.cpp").write_text("int f() { return undeclared_name; }\n")
    runs = compiler_runs(monkeypatch)
    failures = []
    for _ in range(2):
        with pytest.raises(exc.CppCompileError) as raised:
            cpp_builder._run_compile_cmd("g++ kernel.cpp -O3 -shared -fPIC -o kernel.so", str(tmp_path))
        failures.append(describe_failure(raised.value))
    assert [r.split()[0] for r in runs] == ["g++", "sh"]
    assert failures[0] == failures[1] and (failures[0].type, failures[0].frame) == \
        ("CalledProcessError", "cpp_builder.py:_run_compile_cmd") and "undeclared_name" in failures[1].message


def test_a_source_error_is_remembered_with_its_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    runs, errors = remembered(monkeypatch, tmp_path, "kernel.cpp:1:18: error: 'undeclared_name' was not declared")
    assert len(compiles(runs)) == 1 and errors[0] == errors[1] and "undeclared_name" in errors[1]
    (tmp_path / "kernel.cpp").write_text("int f() { return 0; }\n")  # another source: compiled again
    from torch._inductor import cpp_builder, exc

    with pytest.raises(exc.CppCompileError):
        cpp_builder._run_compile_cmd(f"g++ {tmp_path / 'kernel.cpp'} -O3 -shared -o {tmp_path / 'kernel.so'}",
                                     str(tmp_path))
    assert len(compiles(runs)) == 2


@pytest.mark.parametrize("output", [
    "g++: fatal error: Killed signal terminated program cc1plus",
    "kernel.cpp:1:18: internal compiler error: Segmentation fault",
    "/usr/bin/ld: final link failed: No space left on device",
])
def test_a_killed_or_crashed_compiler_runs_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, output: str) -> None:
    runs, errors = remembered(monkeypatch, tmp_path, output)
    assert runs == compiles(runs) and len(runs) == 2 and errors[0] == errors[1]


def linked_through_gold(monkeypatch: pytest.MonkeyPatch, compiler: object = None) -> list[str]:
    """Install the gold link over a compiler that records each command (and runs the real one,
    or calls `compiler(cmd)` instead); undone after the test."""
    from torch._inductor import cpp_builder

    commands: list[str] = []
    real = cpp_builder._run_compile_cmd

    def run(cmd: str, cwd: str) -> None:
        commands.append(cmd)
        compiler(cmd) if compiler is not None else real(cmd, cwd)

    monkeypatch.setattr(cpp_builder, "_run_compile_cmd", run)
    monkeypatch.setattr(speedups, "GOLD_REFUSED", {})
    assert speedups.link_with_gold() and speedups.link_with_gold()  # idempotent: one layer
    return commands


def inductors_compiler_links_with_gold() -> bool:
    from torch._inductor import cpp_builder

    return speedups._links_with_gold(cpp_builder.get_cpp_compiler())


@pytest.mark.skipif(not inductors_compiler_links_with_gold(),
                    reason="inductor's C++ compiler cannot link with gold here")
def test_modules_link_with_gold_and_the_verdict_stays(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fresh_code_caches(monkeypatch, tmp_path)
    commands = linked_through_gold(monkeypatch)
    verdict = FuzzSession().evaluate(frozen_cpp_mm())
    assert not verdict.rejected and verdict.violations == []
    links = [c for c in commands if speedups.links_shared_object(shlex.split(c))]
    assert links and [c for c in links if not c.endswith(speedups.GOLD)] == [], commands  # names the unlinked ones
    built = [Path(arg) for c in links for arg in c.split() if arg.endswith(".so") and Path(arg).is_file()]
    assert built and all(b".note.gnu.gold-version" in so.read_bytes() for so in built)  # gold's own mark


def test_a_link_that_fails_only_with_gold_runs_inductors_own_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor import cpp_builder, exc

    def compiler(cmd: str) -> None:  # the planted bug: gold cannot link what GNU ld can
        if cmd.endswith(speedups.GOLD):
            raise exc.CppCompileError(cmd.split(), "ld.gold: internal error in relocate_section")

    monkeypatch.setattr(speedups, "_links_with_gold", lambda compiler: True)
    commands = linked_through_gold(monkeypatch, compiler)
    cpp_builder._run_compile_cmd("g++ k.cpp -O3 -shared -o k.so", ".")
    assert commands == [f"g++ k.cpp -O3 -shared -o k.so {speedups.GOLD}", "g++ k.cpp -O3 -shared -o k.so"]
    cpp_builder._run_compile_cmd("g++ k.cpp -O3 -c -o k.o", ".")  # no link: nothing changed
    assert commands[-1] == "g++ k.cpp -O3 -c -o k.o"
    cpp_builder._run_compile_cmd("g++ m.cpp -O3 -shared -o m.so", ".")  # gold refused once: not asked again
    assert commands[-1] == "g++ m.cpp -O3 -shared -o m.so" and len(commands) == 4
    assert "relocate_section" in speedups.GOLD_REFUSED["g++"]


FAKE_COMPILER = """#!/bin/sh
# a compiler driver that takes any flags; {behaviour}
for arg; do [ "$prev" = "-o" ] && out="$arg"; prev="$arg"; done
{action}
"""


@pytest.mark.parametrize(("behaviour", "action", "links"), [
    ("gold fails (the H200's)", 'echo "ld.gold: error: cannot open /opt/gcc/lib/.../libstdc++.so" >&2; exit 1', False),
    ("it ignores -fuse-ld=gold", 'printf "ELF without the note" > "$out"', False),
    ("gold links", 'printf "ELF .note.gnu.gold-version" > "$out"', True),
])
def test_gold_is_used_only_by_a_compiler_that_links_a_cpp_module_with_it(tmp_path: Path, behaviour: str, action: str,
                                                                          links: bool) -> None:
    fake = tmp_path / "g++"
    fake.write_text(FAKE_COMPILER.format(behaviour=behaviour, action=action))
    fake.chmod(0o755)
    assert speedups._links_with_gold(str(fake)) is links


def test_a_source_error_under_gold_is_inductors_own_and_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._inductor import cpp_builder, exc

    def compiler(cmd: str) -> None:
        raise exc.CppCompileError(cmd.split(), "k.cpp:1:18: error: 'undeclared_name' was not declared")

    monkeypatch.setattr(speedups, "_links_with_gold", lambda compiler: True)
    commands = linked_through_gold(monkeypatch, compiler)
    with pytest.raises(exc.CppCompileError) as raised:
        cpp_builder._run_compile_cmd("g++ k.cpp -O3 -shared -o k.so", ".")
    assert len(commands) == 1 and raised.value.cmd == ["g++", "k.cpp", "-O3", "-shared", "-o", "k.so"]
    assert "undeclared_name" in raised.value.output


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_compiles_skip_the_guard_latency_sample_and_guards_still_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    from torch._dynamo import guards

    samples: list[int] = []
    monkeypatch.setattr(guards, "profile_guard_manager", lambda *args: samples.append(1) or 0.0)
    torch._dynamo.reset()
    torch.compile(lambda x: x * 2, dynamic=False)(torch.ones(3))
    assert samples == [1]  # the hook is where this torch samples
    assert speedups.skip_guard_latency_profiling()
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounter()
    double = torch.compile(lambda x: x * 2, backend=counter, dynamic=False)
    assert double(torch.ones(3)).tolist() == [2.0] * 3 and double(torch.ones(3)).tolist() == [2.0] * 3
    assert double(torch.ones(4)).tolist() == [2.0] * 4  # the shape guard fails: compiled again
    assert samples == [1] and counter.frame_count == 2


def cpp_sources(cache_dir: Path) -> set[str]:
    return {p.read_text() for p in cache_dir.rglob("*.cpp")}


def test_kernel_templates_parse_once_and_render_the_same_kernels(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    from torch._inductor.codegen.common import KernelTemplate

    held = KernelTemplate.__dict__["_template_from_string"].__func__
    parse = getattr(held, "__wrapped__", held)  # inductor's own, whether or not this process parses once
    parsed: list[str] = []
    monkeypatch.setattr(KernelTemplate, "_template_from_string",
                        staticmethod(lambda source: parsed.append(source) or parse(source)))
    rig_benchmarks(monkeypatch, lambda timings: {c: 1e-3 if is_cpp_choice(c) else 1.0 for c in timings})  # the
    # template wins every compile: which kernel the output code holds is not left to benchmark noise
    fresh_code_caches(monkeypatch, tmp_path / "warm")  # a fresh process's one-time ISA checks compile here
    FuzzSession().evaluate(frozen_cpp_mm())
    parsed.clear()
    fresh_code_caches(monkeypatch, tmp_path / "inductor")
    assert FuzzSession().evaluate(frozen_cpp_mm()).violations == []
    own, own_parses = cpp_sources(tmp_path / "inductor"), len(parsed)
    assert own and own_parses  # torch 2.13 parses the GEMM template again on each render, 2.11 once a compile
    assert speedups.parse_templates_once() and speedups.parse_templates_once()  # idempotent: one layer
    parses = []
    for run in ("once", "again"):
        fresh_code_caches(monkeypatch, tmp_path / run)
        assert FuzzSession().evaluate(frozen_cpp_mm()).violations == []
        assert cpp_sources(tmp_path / run) == own  # the same kernels, byte for byte
        parses.append(len(parsed))
    assert parses[0] - own_parses == len(set(parsed[own_parses:])) and parses[1] == parses[0]  # each source once
    first, second = (KernelTemplate._template_from_string(s) for s in ("a{{ x }}", "b{{ x }}"))
    assert (first.render(x=1), second.render(x=1)) == ("a1", "b1")  # keyed by the source


def kernel(x: torch.Tensor) -> torch.Tensor:
    return (x * 3).sum(0)


KERNEL_IN_A_FRESH_PROCESS = f"""
import torch
from torch._inductor import config, cpp_builder
config.fx_graph_cache = config.cpp_cache_precompile_headers = False
built = []
real = cpp_builder._run_compile_cmd
cpp_builder._run_compile_cmd = lambda cmd, cwd: built.append(cmd) or real(cmd, cwd)
{inspect.getsource(kernel)}
torch.compile(kernel)(torch.ones(5, 7))
print(sum(".main.cpp" in cmd for cmd in built))  # kernel modules (not the ISA check or a header)
"""


@pytest.mark.slow  # a minute or more on one core of an xdist worker (H200 run)
def test_a_kernel_one_worker_compiled_is_loaded_by_the_next(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Workers of one machine share its code cache: they get the same cache directories, and a fresh
    process with them loads a kernel that another process compiled instead of building it again
    (inductor keys compiled kernels by source and command, nothing per process)."""
    from torch._inductor import config

    monkeypatch.setattr("fuzz.engine.executor.cache_root", lambda: tmp_path / "caches")
    envs = [Executor(index, log_dir=tmp_path / "logs").env() for index in (0, 1)]
    expected = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "caches" / "inductor"),
                "TRITON_CACHE_DIR": str(tmp_path / "caches" / "triton")}
    assert [{k: e[k] for k in expected} for e in envs] == [expected, expected]
    fresh_code_caches(monkeypatch, tmp_path / "caches" / "inductor")  # this process: worker 0
    commands = compile_commands(monkeypatch)
    torch._dynamo.reset()
    with config.patch(fx_graph_cache=False, cpp_cache_precompile_headers=False):
        torch.compile(kernel)(torch.ones(5, 7))
    assert sum(".main.cpp" in c for c in commands) == 1  # built here
    other = subprocess.run([sys.executable, "-c", KERNEL_IN_A_FRESH_PROCESS], env={**os.environ, **envs[1]},
                           check=True, capture_output=True, text=True)
    assert other.stdout.split()[-1] == "0", other.stdout  # worker 1 built nothing: it loaded worker 0's


def test_workers_that_share_the_cores_let_idle_openmp_threads_sleep(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    """A worker given fewer cores than the machine has runs OpenMP with passive waiting (its idle
    threads would otherwise spin on cores the other workers compile on); one alone on the machine,
    and a user's own OMP_WAIT_POLICY, are left as they are."""
    monkeypatch.setattr(machine, "usable_cpus", lambda: 16)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)

    def policy(threads: int | None) -> str | None:
        return Executor(0, log_dir=tmp_path, compile_threads=threads).env().get("OMP_WAIT_POLICY")

    assert [policy(1), policy(8), policy(16), policy(None)] == ["PASSIVE", "PASSIVE", None, None]
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert policy(1) is None  # the worker inherits the user's


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(bool(machine.visible_gpu_ids()), reason="a GPU machine's workers start fresh")
def test_a_restarted_worker_is_forked_ready_imported_and_its_death_still_reads_as_before(tmp_path: Path) -> None:
    """The imports (most of a worker's start) are paid once, by the zygote: a worker forked from it,
    the first or one replacing a crashed one, uses well under half the zygote's CPU to get ready;
    the crash is reported with its signal and faulthandler dump as from a fresh worker."""
    executor = Executor(0, log_dir=tmp_path)
    try:
        executor.start()
        first = executor.child
        assert first is not None and isinstance(first.proc, ForkedProcess)
        zygote = executor.zygote
        assert zygote is not None and not executor.zygote_refused
        os.kill(first.proc.pid, signal.SIGSEGV)
        death = executor.run(frozen_cpp_mm().to_json())
        assert death.death == "killed:SIGSEGV" and death.last_words.startswith("Fatal Python error: Segmentation")
        executor.start()
        second = executor.child
        assert second is not None and isinstance(second.proc, ForkedProcess) and executor.zygote is zygote
        assert zygote.compiler_preloaded and cpu_seconds(second.proc.pid) < cpu_seconds(zygote.proc.pid) / 2, (
            cpu_seconds(second.proc.pid), cpu_seconds(zygote.proc.pid))
        assert executor.run(frozen_cpp_mm().to_json()).verdict is not None  # and it evaluates cases
    finally:
        executor.stop()
    assert zygote.proc.poll() is not None  # stopped with the Executor


@pytest.mark.parametrize("where", ["coverage", "gpu-worker", "gpu-machine"])
def test_workers_start_fresh_where_a_zygote_cannot_help(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        where: str) -> None:
    """Coverage must see inductor's import-time lines, which a forked worker never runs; on a GPU
    machine the zygote could not import the compiler (one of its modules initializes CUDA)."""
    monkeypatch.setattr(machine, "visible_gpu_ids", lambda: ["0"] if where == "gpu-machine" else [])
    executor = Executor(0, log_dir=tmp_path, coverage_dir=tmp_path / "cov" if where == "coverage" else None,
                        gpu="0" if where == "gpu-worker" else None)
    assert executor._zygote() is None and executor.zygote_refused


def test_a_cpu_campaigns_workers_are_forked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--device cpu` hides the GPUs from its workers (CUDA_VISIBLE_DEVICES=""): they are CPU workers."""
    monkeypatch.setattr(machine, "visible_gpu_ids", list)
    assert not Executor(0, log_dir=tmp_path, gpu="").zygote_refused


@pytest.mark.parametrize(("maps", "driver"), [
    ("7f00-7f01 r-xp 0 08:01 5 /usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15\n",
     "/usr/lib/x86_64-linux-gnu/libcuda.so.570.86.15"),
    ("7f00-7f01 r-xp 0 08:01 5 /site-packages/nvidia/cuda_runtime/lib/libcudart.so.12\n"
     "7f00-7f01 rw-p 0 00:00 0 [heap]\n", None),
])
def test_the_zygote_finds_the_cuda_driver_library(maps: str, driver: str | None) -> None:
    assert cuda_driver_path(maps) == driver


@pytest.mark.gpu
def test_the_zygote_sees_whether_the_cuda_driver_was_initialized() -> None:
    probe = ("import torch; from fuzz.engine.zygote import cuda_driver_initialized as i; "
             "a = i(); torch.cuda.init(); print(a, i())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]


def test_the_sampler_sees_a_busy_core() -> None:
    busy = Utilization().start()
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        pass
    busy.stop()
    assert busy.cpu_percent is not None and busy.cpu_percent > 100 / len(busy.cpus) / 2, busy.summary()
    assert busy.summary().startswith("cores busy ")


class FakeTimer:
    """Stands in for inductor's benchmarker: records, while it times, whether another process could
    take the lock (it must not), and calls itself once nested (the lock must stay held)."""

    def __init__(self, lock_path: Path) -> None:
        self.lock_path, self.free_while_timing = lock_path, []

    def _other_worker_can_lock(self) -> bool:
        import fcntl

        with open(self.lock_path, "a") as other:  # another open file description, as another process has
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            fcntl.flock(other, fcntl.LOCK_UN)
            return True

    def benchmark_gpu(self, nested: bool = False) -> float:
        if nested:
            self.benchmark_gpu_with_cuda_graph()
        self.free_while_timing.append(self._other_worker_can_lock())
        return 1.0

    def benchmark_gpu_with_cuda_graph(self) -> float:
        self.free_while_timing.append(self._other_worker_can_lock())
        return 1.0


def test_workers_of_one_gpu_time_kernels_one_at_a_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from torch._inductor.runtime import benchmarking

    lock = tmp_path / "campaign" / "gpu0.benchmark.lock"  # its directory not made yet, as on a fresh machine
    timer = FakeTimer(lock)
    monkeypatch.setattr(benchmarking, "benchmarker", timer)
    assert speedups.serialize_gpu_benchmarks(str(lock)) and speedups.serialize_gpu_benchmarks(str(lock))
    assert timer.benchmark_gpu() == 1.0 and timer.benchmark_gpu(nested=True) == 1.0
    assert timer.free_while_timing == [False, False, False]  # held throughout, the nested call too
    assert timer._other_worker_can_lock()  # and released after
