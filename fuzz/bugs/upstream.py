"""Upstream issue drafts: findings grouped by root cause, one Markdown draft per group.

A group is one likely fix. Findings a triaged root cause covers (ROOT_CAUSES, by their known-bug
entry) form its group; any other finding joins those with the same symptom (exception type and
innermost inductor frame, kind of wrong result and kernel family, or way the process died) and
the same trigger (empty dims, freezing, dynamic shapes, the backend its plain repro needs).

A draft holds what a PyTorch maintainer asks for: the plain repro (fuzz/export/plain_repro.py), what it
printed (the raw traceback), observed vs expected, the single changes that flip the verdict, the
suspected location (file:line of the innermost inductor frame, or the triaged one), the versions
it was measured failing on, and the environment (`torch.utils.collect_env`, CPU model included).
Drafts are written from the findings and the files their export wrote; nothing is re-run here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from fuzz.export.plain_repro import plain_summary
from fuzz.store.findings import Finding, now


@dataclasses.dataclass(frozen=True)
class RootCause:
    """A triaged cause: the known bugs (registry names) one fix would close, where it likely lies,
    and, for an observation that is not worth filing as is, why."""

    key: str
    title: str
    bugs: tuple[str, ...]
    location: str
    not_a_bug: str = ""


ROOT_CAUSES: tuple[RootCause, ...] = (
    RootCause("cpp-template-empty-dims",
              "[inductor][cpu] max-autotune offers CPP GEMM/BMM template choices for M, N or K == 0, which crash "
              "or emit C++ that does not compile",
              ("cpp-gemm-frozen-k0-crash", "cpp-gemm-frozen-n0-compile-error", "cpp-gemm-frozen-m0-compile-error",
               "cpp-bmm-empty-dim-crash", "cpp-gemm-frozen-n0-dynamic-sigfpe"),
              "torch/_inductor/kernel/mm.py (tuned_mm, tuned_addmm) and kernel/bmm.py (tuned_bmm) add CPP template "
              "choices without the `is_nonzero` guard every other template gets, and `use_cpp_gemm_template` "
              "(torch/_inductor/utils.py) never checks K == 0"),
    RootCause("cpp-template-symbolic-strides",
              "[inductor][cpu] max-autotune CPP GEMM/BMM templates break when a recompile makes an input stride "
              "symbolic",
              ("cpp-bmm-dynamic-batch-stride-compile-error", "cpp-bmm-size1-batch-stride-compile-error",
               "cpp-gemm-dynamic-recompile-crash"),
              "the CPP template kernel does not declare stride symbols it indexes with "
              "(torch/_inductor/codegen/cpp_template_kernel.py), and benchmarking its choices materializes "
              "example inputs from symbolic strides (torch/_inductor/select_algorithm.py)"),
    RootCause("freezing-packs-empty-weights",
              "[inductor][cpu] freezing packs a linear weight with K == 0 or N == 0, or for an input with M == 0, "
              "for oneDNN / MKL, which fails (RuntimeError) or kills the process (SIGFPE)",
              ("freezing-half-linear-empty-weight-onednn", "freezing-mkl-linear-n0-sigfpe",
               "freezing-mkl-linear-m0-sigfpe"),
              "torch/_inductor/fx_passes/mkldnn_fusion.py: `_is_packable_linear` accepts empty weights and batches"),
    RootCause("cpp-gemm-frozen-weight-offset",
              "[inductor][cpu] CPP GEMM template reads a frozen weight from the start of its storage, ignoring "
              "its storage offset (wrong results)",
              ("cpp-gemm-frozen-weight-storage-offset",),
              "torch/_inductor/codegen/cpp_gemm_template.py, the constant-weight path (normalize_shapes re-views "
              "W with the view's size, stride and offset before blocking it); pytorch#159233, in 2.13, fixed the "
              "offset of non-constant weights only (_maybe_remove_storage_offset)"),
    RootCause("cpp-bmm-epilogue-input-mutation",
              "[inductor][cpu] CPP BMM template with a pointwise epilogue, then an in-place mutation of the bmm "
              "input: AssertionError in ir.py",
              ("cpp-bmm-epilogue-input-mutation-crash",),
              "epilogue fusion into the CPP BMM template (torch/_inductor/codegen/cpp_bmm_template.py)"),
    RootCause("addmm-scalar-bias",
              "[inductor] max-autotune addmm with a 0-d bias: IndexError in tuned_addmm",
              ("addmm-scalar-bias-indexerror",),
              "torch/_inductor/kernel/mm.py: tuned_addmm reads inp.get_stride()[0] before checking the bias rank"),
    RootCause("aten-int-mm-short-leading-dim",
              "torch._int_mm on CPU returns garbage when an operand's leading dimension is shorter than it needs",
              ("aten-int-mm-expanded-operand", "aten-int-mm-expanded-operand-dense-other"),
              "aten/src/ATen/native/mkldnn/Matmul.cpp (_mkldnn_gemm_i8i8i32_with_blas takes lda/ldb from strides)"),
    RootCause("aten-baddbmm-zero-alpha",
              "torch.baddbmm on CPU in bf16/fp16 with alpha=0 (and beta=0) returns uninitialized memory",
              ("aten-cpu-baddbmm-zero-alpha-uninitialized", "aten-cpu-baddbmm-zero-alpha-wrong"),
              "ATen's CPU baddbmm for reduced-precision dtypes (aten/src/ATen/native/LinearAlgebra.cpp)"),
    RootCause("aten-bf16-bmm-odd-k-inf",
              "torch.bmm on CPU in bf16 returns NaN where the exact product is +-inf (an inf in A's last column, "
              "odd K, a batch of 2 or more)",
              ("aten-cpu-bf16-bmm-odd-k-inf-nan",),
              "oneDNN's bf16 batched matmul on AVX-512 (aten/src/ATen/native/mkldnn/Matmul.cpp): K is paired, the "
              "inf likely meets a zero pad"),
    RootCause("aten-bf16-amx-nan-in-finite-rows",
              "torch.bmm / torch.mm on CPU in bf16 put NaN into rows whose inputs are finite when other rows hold "
              "NaN/inf (AMX Xeon)",
              ("aten-cpu-bf16-amx-nan-in-finite-rows",),
              "oneDNN's bf16 matmul with AMX tiles (aten/src/ATen/native/mkldnn/Matmul.cpp): a NaN of one row "
              "likely reaches others through a blocked or padded tile"),
    RootCause("mm-epilogue-zero-scalar",
              "[inductor][cuda] max-autotune addmm/baddbmm with alpha=0 or beta=0 propagates inf/NaN from the term "
              "eager ignores",
              ("mm-epilogue-zero-scalar-nonfinite",),
              "torch/_inductor/kernel/mm_common.py: addmm_epilogue multiplies by a zero alpha/beta instead of "
              "dropping the term (the addmm decomposition has the same fault: pytorch#196596, fix PR #196600 open)"),
    RootCause("triton-mm-small-m-block-k-128",
              "[inductor] Triton mm template config BLOCK_K=128, num_warps=1 computes a wrong fp16 addmm for M=1",
              ("triton-mm-template-small-m-block-k-128",),
              "the generated Triton kernel (torch/_inductor/kernel/mm.py's mm template) or Triton itself: "
              "see the standalone kernel script"),
    RootCause("pad-mm-output-padded-strides",
              "[inductor][cuda] shape padding returns a padded view as a bmm output: its strides differ from eager's",
              ("pad-mm-output-padded-strides",),
              "torch/_inductor/fx_passes/pad_mm.py slices the padded product back; torch/_inductor/graph.py then "
              "keeps only the stride order of the (now view) output, against keep_output_stride"),
    RootCause("cpp-half-reduction-accumulator-redeclared",
              "[inductor][cpu] the same fp16/bf16 bmm with M == 1 twice in one graph: the C++ kernel declares "
              "its vector accumulator twice (conflicting declaration, does not compile)",
              ("cpp-half-bmm-m1-repeated-product-compile-error",),
              "the CPP reduction codegen (torch/_inductor/codegen/cpp.py) for the two fused reductions that a "
              "decomposed M == 1 bmm (torch/_inductor/decomposition.py) becomes: both name their half-precision "
              "accumulator `at_BFloat16_tmp_acc0_vec` (float32 compiles)"),
    RootCause("mm-out-dtype-row-vector",
              "[inductor][cuda] torch.mm with out_dtype=float32 and one row returns the input dtype under "
              "coordinate-descent tuning",
              ("mm-out-dtype-row-vector-dtype",),
              "torch/_inductor/decomposition.py: the mm decomposition for M == 1 or N == 1 "
              "(coordinate_descent_tuning) does not honour out_dtype"),
)


@dataclasses.dataclass
class Group:
    """Findings one fix would close."""

    key: str
    title: str
    findings: list[Finding]
    cause: RootCause | None = None

    @property
    def representative(self) -> Finding:
        """The finding whose plain repro leads the draft: confirmed, then reproduced, then shortest."""
        def rank(f: Finding) -> tuple[int, int, int]:
            plain = _plain(f)
            return (not plain.get("confirmed"), not plain.get("reproduced"), len(f.key))
        return min(self.findings, key=rank)


def _dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else empty (records written by other versions may differ)."""
    return value if isinstance(value, dict) else {}


def _plain(f: Finding) -> dict[str, Any]:
    return _dict(_dict(f.repro).get("plain"))


def _dims(case: dict[str, Any]) -> dict[str, int]:
    """M, N, K of the case's first product (nothing for a malformed case)."""
    try:
        a, b = (list(t["shape"]) for t in case["inputs"][:2])
        return {"M": a[-2] if len(a) > 1 else 1, "K": a[-1] if a else 1, "N": b[-1] if b else 1}
    except (KeyError, TypeError, ValueError):
        return {}


def trigger(f: Finding) -> tuple[str, ...]:
    """What the failure needs beyond the op: empty dims, freezing, dynamic shapes, the backend set."""
    case, form = _dict(f.best_case), _dict(_plain(f).get("form"))
    empty = [d for d, n in _dims(case).items() if n == 0]
    parts = [f"{'/'.join(empty)} == 0"] if empty else []
    if form.get("frozen", case.get("frozen_weights")):
        parts.append("frozen weights")
    if case.get("dynamic") or case.get("mark_dynamic") or case.get("second_call"):
        parts.append("dynamic shapes")
    backends = _dict(form.get("patch")).get("max_autotune_gemm_backends")
    return tuple(parts + ([f"backends {backends}"] if backends else []))


def symptom(f: Finding) -> str:
    """The failure without op, dtype or call: exception type and innermost frame, kind of wrong
    result and kernel family, or the worker's death."""
    parts = f.signature.split(":")
    if f.oracle == "crash":
        return f.signature
    if f.oracle == "process":
        return ":".join(parts[:-1])  # without the op
    family = f.signature.partition("@")[2]
    return f"{f.oracle}:{parts[0]}" + (f"@{family}" if family else "")


def group_findings(findings: Iterable[Finding]) -> list[Group]:
    """Root-cause groups: triaged causes by known bug, the rest by symptom and trigger."""
    by_bug = {bug: cause for cause in ROOT_CAUSES for bug in cause.bugs}
    groups: dict[str, Group] = {}
    for f in findings:
        cause = by_bug.get(_dict(f.known_bug).get("name", ""))
        if cause is not None:
            key, title = cause.key, cause.title
        else:
            key = re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join((symptom(f),) + trigger(f))).strip("-").lower()[:100]
            title = _title(f)
        groups.setdefault(key, Group(key, title, [], cause)).findings.append(f)
    return sorted(groups.values(), key=lambda g: g.key)


def _title(f: Finding) -> str:
    op = f.op
    how = 'torch.compile(mode="max-autotune")' if _dict(_plain(f).get("form")).get("mode") else "torch.compile"
    parts = f.signature.split(":")
    if f.oracle == "crash":
        return f"[inductor] {how} of {op}: {parts[1]} in {':'.join(parts[2:])}"
    if f.oracle == "process":
        return f"[inductor] {how} of {op} kills the process ({parts[0]} {parts[1]})"
    if parts[0] == "dropped":
        stage = "compile" if parts[-1] == "precompile" else "run"
        return (f"[inductor] {how} of {op}: the {f.signature.partition('@')[2].split(':')[0]} choice fails to "
                f"{stage} while autotuning (dropped silently; alone it raises)")
    what = {"output-strides": "other strides than eager", "output-meta": "another shape or dtype than eager",
            "choice-crash": f"a {parts[-1]} compiling one kernel choice"}.get(parts[0], "wrong values")
    return f"[inductor] {how} of {op} gives {what}" + (f" ({f.signature.partition('@')[2]})" if "@" in f.signature
                                                       else "")


# --- drafts -----------------------------------------------------------------------------------------

EXPECTED = {
    "raises": "The compiled program returns what eager returns for these inputs (eager runs them fine).",
    "exact": "The exact result: every input is a small integer, so every product and partial sum is exact in "
             "the dtype, and eager returns it.",
    "bound": "The float64 result within float32 accumulation's error bound (the tolerance in `check`).",
    "nonfinite": "NaN and inf exactly where the float64 result of the same inputs has them.",
    "strides": "The strides eager gives (the values are compared too).",
    "meta": "Eager's shape and dtype.",
}


FULL_OUTPUT_LINES = 150
"""The most lines of a repro's output a draft shows (in a folded block)."""


def _short(message: str, limit: int = 200) -> str:
    return message if len(message) <= limit else message[:limit] + " …"


def _read(path: Path | None) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path else None
    except (OSError, UnicodeDecodeError):
        return None


def _locate(rel: str | None, sources: Sequence[Path]) -> Path | None:
    """A path an export recorded (relative to its campaign directory), under one of `sources`."""
    if not rel:
        return None
    for root in sources:
        root = Path(root)
        for base in (root, root.parent):  # a campaign dir, or its findings/ dir
            if (base / rel).is_file():
                return base / rel
    return None


def _fence(text: str, lang: str = "") -> list[str]:
    ticks = "````" if "```" in text else "```"
    return [ticks + lang, text.rstrip("\n"), ticks]


def _observed(output: str) -> str:
    """The end of what the repro printed: from the innermost frame on (the exception and its
    message); when that is long (a C++ compile error's message is the compiler's whole output), its
    first lines, the compiler's `error:` lines and its last lines."""
    lines = output.rstrip("\n").splitlines()
    rest = lines[max((i for i, ln in enumerate(lines) if ln.startswith('  File "')), default=0):]
    if len(rest) <= 40:
        return "\n".join(rest)
    errors = [ln for ln in rest if re.search(r"\berror:", ln)][:10]
    return "\n".join([*rest[:6], "[...]", *errors, *(["[...]"] if errors else []), *rest[-4:]])


def _tail(output: str, limit: int = FULL_OUTPUT_LINES) -> str:
    """The output, or its last `limit` lines (a C++ compile error prints thousands)."""
    lines = output.rstrip("\n").splitlines()
    return output if len(lines) <= limit else "\n".join([f"[{len(lines) - limit} earlier lines cut]", *lines[-limit:]])


def render_draft(group: Group, sources: Sequence[Path]) -> str:
    """The Markdown issue draft of one group."""
    rep = group.representative
    plain = _plain(rep)
    script = _read(_locate(plain.get("path"), sources))
    log = _read(_locate(plain.get("log"), sources))
    out = [f"# {group.title}", "",
           f"<!-- root-cause group `{group.key}`: {len(group.findings)} finding(s); drafted {now()} by "
           "mm-autotune-fuzz `python -m fuzz report --upstream` -->", "", "### 🐛 Describe the bug", "",
           f"Found by fuzzing inductor's max-autotune matmul path: {_short(rep.message)}. The program below "
           f"{plain_summary(plain)}.", ""]
    if script:
        out += _fence(script, "python") + [""]
    else:
        out += [f"(no plain repro was exported for `{rep.key}`: run `python -m fuzz export` on its campaign; the "
                f"fuzzer's own repro: `{_dict(rep.repro).get('path') or '-'}`)", ""]
    if (plain.get("confirmed") or plain.get("reproduced")) and log:
        death = _dict(plain.get("outcome"))
        ending = {"killed": f"\n[the process was killed by {death.get('type')}]",
                  "hang": "\n[the process hung: stopped at the time limit]"}.get(str(death.get("status")), "")
        out += [f"**Observed** (torch {plain.get('torch')}):", "", *_fence(_observed(log) + ending), ""]
        if len(log.splitlines()) > len(_observed(log).splitlines()):
            out += ["<details><summary>Full output</summary>", "", *_fence(_tail(log)), "", "</details>", ""]
    out += [f"**Expected**: {EXPECTED.get(str(plain.get('check')), EXPECTED['raises'])}", ""]
    out += _flips(plain)
    out += ["**Suspected location**: " + _suspect(group, _dict(plain.get("outcome"))), ""]
    out += _others([f for f in group.findings if f is not rep], sources)
    out += _versions(group, rep, plain, sources)
    return "\n".join(out)


def _others(findings: list[Finding], sources: Sequence[Path]) -> list[str]:
    """The group's other findings, each with its own plain repro folded away."""
    if not findings:
        return []
    out = ["**Same root cause**, other variants:", ""]
    for f in findings:
        plain = _plain(f)
        script = _read(_locate(plain.get("path"), sources))
        out += [f"- `{f.signature}` ({f.op}, seen {f.count}x): {_short(f.message)}; its plain repro "
                f"{plain_summary(plain)}."]
        if script:
            out += ["", "  <details><summary>plain repro</summary>", "", *_fence(script, "python"), "",
                    "  </details>", ""]
    return out + [""]


def _flips(plain: dict[str, Any]) -> list[str]:
    flips = [_dict(flip) for flip in plain.get("flips") or []]
    if not flips:
        return []
    outcome = _dict(plain.get("outcome"))
    same = (outcome.get("status"), outcome.get("type"), outcome.get("frame"))
    out = [f"**What changes the verdict** (one change at a time to the repro, torch {plain.get('torch')}):", ""]
    for flip in flips:
        verdict = "**passes**" if flip.get("status") == "passed" else \
            "still fails the same way" if (flip.get("status"), flip.get("type"), flip.get("frame")) == same else \
            "fails differently: " + plain_summary({"outcome": flip})
        out.append(f"- {flip.get('change')}: {verdict}")
        if str(flip.get("change", "")).startswith("eagerly") and verdict == "still fails the same way":
            out.append("  (eager gives the same wrong values: the bug is in the ATen kernel, not in inductor)")
    return out + [""]


def _suspect(group: Group, outcome: dict[str, Any]) -> str:
    where = str(outcome.get("location", ""))
    parts = [f"`torch/{where.split('/torch/', 1)[1]}` in `{str(outcome.get('frame', '')).rpartition(':')[2]}` "
             "(innermost inductor frame of the traceback)"] if "/torch/" in where else []
    if outcome.get("status") in ("killed", "hang"):
        parts.append("the process dies (or hangs) in native code, so there is no Python frame to blame: "
                     "`gdb -batch -ex run -ex bt --args python repro.py` shows the native frame")
    if group.cause is not None:
        parts.append(f"triage: {group.cause.location}")
    return "; ".join(parts) or "no exception to locate: the wrong values come from the kernel the repro selects " \
                               "(`TORCH_LOGS=output_code python repro.py` prints the generated code)"


def _versions(group: Group, rep: Finding, plain: dict[str, Any], sources: Sequence[Path]) -> list[str]:
    seen = sorted({f"torch {v.get('torch')} on {v.get('host') or '?'}" + (f" ({v['gpu']})" if v.get("gpu") else "")
                   for v in (_dict(f.versions) for f in group.findings)})
    repros = sorted({f"torch {p.get('torch')}" for p in map(_plain, group.findings) if p.get("reproduced")})
    registry = _registry_versions(group)
    out = ["**Affected versions (as measured)**: the fuzzer saw it on " + ", ".join(seen) + "; the plain repro "
           + ("fails on " + ", ".join(repros) if repros else "was not verified")
           + (f"; mm-autotune-fuzz's known-bug registry has seen it fail on {', '.join(registry)}." if registry
              else "."), ""]
    tracking = sorted({str(_dict(f.known_bug).get("tracking")) for f in group.findings if _dict(f.known_bug)})
    if tracking:
        out += ["**Tracking** (mm-autotune-fuzz's registry): " + "; ".join(tracking), ""]
    env = _read(_locate(plain.get("environment"), sources))
    out += ["### Versions", ""]
    if env:
        return out + _fence(env.strip()) + [""]
    return out + ["(no `collect_env` output was exported; versions recorded with the finding:)", "",
                  *_fence("\n".join(f"{k}: {v}" for k, v in sorted(_dict(rep.versions).items()) if k != "ops")), ""]


def _registry_versions(group: Group) -> list[str]:
    from fuzz.bugs.known_bugs import KNOWN_BUGS

    names = {_dict(f.known_bug).get("name") for f in group.findings}
    return sorted({v for bug in KNOWN_BUGS if bug.name in names for v in bug.torch_versions})


def write_drafts(findings: Sequence[Finding], out: Path, sources: Sequence[Path],
                 warn: Callable[[str], None]) -> list[Path]:
    """One draft per root-cause group into `out`, and `out`/index.md listing them and the groups not
    drafted, with the reason. A group whose records cannot be read is reported through `warn` and
    listed, never fatal. Returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    groups = group_findings(findings)
    index = ["# Upstream issue drafts", "", f"{len(findings)} finding(s) in {len(groups)} root-cause group(s).", ""]
    written = []
    for group in groups:
        rows = f"{len(group.findings)} finding(s): " + ", ".join(f"`{f.signature}`" for f in group.findings)
        reasons = {_plain(f).get("unsupported") for f in group.findings}
        if group.cause is not None and group.cause.not_a_bug:
            index.append(f"- not drafted: **{group.title}** ({rows}): not worth filing as is: {group.cause.not_a_bug}")
            continue
        if None not in reasons:
            index.append(f"- not drafted: **{group.title}** ({rows}): {'; '.join(sorted(map(str, reasons)))}")
            continue
        if all(_dict(f.repro).get("exit_code") == 0 for f in group.findings):
            index.append(f"- not drafted: **{group.title}** ({rows}): its repros no longer reproduce (FIXED on torch "
                         f"{', '.join(sorted({str(_dict(f.repro).get('torch')) for f in group.findings}))})")
            continue
        try:
            text = render_draft(group, sources)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            warn(f"no draft for {group.key}: a finding's record is malformed ({type(e).__name__}: {e})")
            index.append(f"- not drafted: **{group.title}** ({rows}): a finding's record is malformed")
            continue
        path = out / f"{group.key}.md"
        path.write_text(text, encoding="utf-8")
        written.append(path)
        index.append(f"- [{group.title}]({path.name}) ({rows})")
    (out / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return written + [out / "index.md"]
