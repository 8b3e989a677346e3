"""Layout oracles: a FlexibleLayout only when every choice is extern (soundness), and flexible
exactly when inductor's gates allow it (spec; the other way round is a missed optimization)."""

from __future__ import annotations

from oracles.model import EXTERN_CANDIDATE, MISSED_OPTIMIZATION, UNSOUND, Gate, Observation, SelectionEvent, Violation

FIXED_LAYOUT_BACKENDS = ("CUTLASS", "CK", "CKTILE", "CPP")
"""Backends that add choices outside get_template_configs, so the optimization is skipped."""
HISTORICALLY_FLEXIBLE_OPS = ("mm", "addmm")


def check_soundness(obs: Observation) -> list[Violation]:
    """Every selection that offers a FlexibleLayout must consist of extern kernels only."""
    out = []
    for event in obs.selections:
        flexible = [c for c in event.choices if c.flexible]
        templates = sorted({c.template_class for c in event.choices if c.kind != "extern"})
        if flexible and templates:
            out.append(Violation(
                "layout_soundness", UNSOUND, f"flexible-with-template:{event.op_name}:{','.join(templates)}",
                f"{event.source} for {event.op_name} offers {len(flexible)} FlexibleLayout choice(s) alongside "
                f"code-generated templates {templates}: a later pass may change strides the template baked in"))
    return out


def layout_must_be_fixed(gate: Gate, op_name: str, all_extern: bool) -> bool:
    """The documented gate (`InductorChoices._need_to_fix_layout`) as a pure function."""
    if gate.device_type == "mps" and op_name not in HISTORICALLY_FLEXIBLE_OPS:
        return True
    if gate.origami_rocm:
        return True
    if not (gate.max_autotune or gate.max_autotune_gemm):
        return not gate.allow_flexible_layouts and op_name not in HISTORICALLY_FLEXIBLE_OPS
    if not gate.allow_flexible_layouts:
        return True
    if any(b in FIXED_LAYOUT_BACKENDS for b in gate.backends):
        return True
    return not all_extern


def check_spec(obs: Observation) -> list[Violation]:
    """Each get_template_configs result is flexible exactly when the gate allows it."""
    out = []
    for event in obs.selections:
        if event.source != "template_configs" or event.gate is None or not event.choices:
            continue
        out.extend(_spec_violations(event, event.gate))
    return out


def _spec_violations(event: SelectionEvent, gate: Gate) -> list[Violation]:
    """Fixed where the gate requires it (else unsound), flexible where it allows it (else a missed
    optimization). The gate judges the candidates before they are built: a template candidate that
    then builds no choice (e.g. a Triton config whose rendering divides by zero for an empty
    dimension) still fixes the layout of the extern choices left, as documented."""
    all_extern = all(c.kind == "extern" for c in event.choices) and \
        all(name == EXTERN_CANDIDATE for name in event.unbuilt)
    must_fix = layout_must_be_fixed(gate, event.op_name, all_extern)
    flexible = [c for c in event.choices if c.flexible]
    knobs = f"max_autotune={gate.max_autotune} flag={gate.allow_flexible_layouts} backends={','.join(gate.backends)}"
    if must_fix and flexible:
        return [Violation("layout_spec", UNSOUND, f"flexible-when-gated:{event.op_name}",
                          f"{event.op_name}: {len(flexible)} choice(s) kept a FlexibleLayout although the gate "
                          f"requires fixed layouts ({knobs}, all_extern={all_extern})")]
    if not must_fix and len(flexible) < len(event.choices):
        return [Violation("layout_spec", MISSED_OPTIMIZATION, f"fixed-when-allowed:{event.op_name}",
                          f"{event.op_name}: every choice is extern and the config allows flexible layouts "
                          f"({knobs}), yet {len(event.choices) - len(flexible)} choice(s) got a fixed layout")]
    return []
