"""Known bugs of inductor's CPU path (the CPP GEMM template, freezing, the mkldnn/MKL linear
fusions): part of the registry (fuzz.bugs.known_bugs.KNOWN_BUGS), kept apart by where they live."""

from __future__ import annotations

from fuzz.bugs.entry import HALF, PRODUCT_WRONG_VALUES, WRONG_VALUES, KnownBug
from fuzz.bugs.regions import (
    CPP_COMPILE_ERROR,
    MKL_M0_PACK_MIN_WEIGHT,
    backends,
    calls,
    concat_linear_addmm,
    cpu_cpp_batched,
    frozen_cpp,
    frozen_half_product,
    frozen_integer_linear,
    frozen_linear,
    half_reductions_twice,
    in_int64,
    int8_cpp_product,
    linear_rows,
    narrow_integer_bmm_vector,
    scaled,
    span,
    static,
    unfrozen,
    weight_at_offset_zero,
    with_input,
    without_backend,
    without_config,
    without_repeated_reduction,
)
from strategies.case import TensorSpec

CONCAT_LINEAR = ("repros/concat_linear_addmm_scalars_and_row_bias.py (not yet filed upstream): freezing's "
                 "concat-linear pattern (CPU: cpp.enable_concat_linear) fuses three addmm calls sharing their input "
                 "into one addmm over the concatenated weights and `torch.cat((b1, b2, b3))` biases")
CPU_INDUCTOR_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        name="concat-linear-addmm-ignores-scalars",
        oracles=("numerics",),
        signatures=(rf"{WRONG_VALUES}:addmm:\w+(@.+)?",),  # before lowering: every choice computes it
        applies=lambda c: concat_linear_addmm(c) and scaled(c),
        untrigger=without_config("cpp.enable_concat_linear"),
        tracking=CONCAT_LINEAR + ", dropping alpha and beta (alpha = 0.5 off by 5)",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="concat-linear-2d-bias-crash",
        oracles=("crash",),
        signatures=(r"crash:RuntimeError:fx_passes/freezing_patterns\.py:addmm_fuse_replacement_second",),
        messages=(r"Attempting to broadcast a dimension",),
        applies=lambda c: concat_linear_addmm(c) and len(c.inputs[2].shape) == 2,
        untrigger=without_config("cpp.enable_concat_linear"),
        tracking=CONCAT_LINEAR + ": 2-D biases ((1, N), (M, N)) are concatenated along dim 0, and the fused "
                 "addmm cannot broadcast them (RuntimeError while compiling)",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-dynamic-recompile-crash",
        oracles=("crash",),
        signatures=(r"crash:ModuleNotFoundError:select_algorithm\.py:\w+", r"crash:TypeError:select_algorithm\.py:\w+"),
        messages=(r"No module named 'triton'", r"as_strided\(\): argument 'stride'"),
        applies=lambda c: (c.device == "cpu" and "CPP" in backends(c)
                           and bool(c.second_call or c.dynamic or c.mark_dynamic)),
        untrigger=static,
        tracking="repros/cpp_dynamic_recompile_crash.py (not yet filed upstream): benchmarking the CPP "
                 "choices of a dynamic-shape recompile imports triton / passes symbolic strides",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-k0-crash",
        oracles=("crash",),
        signatures=(r"crash:TypeError:codegen/cpp_gemm_template\.py:get_cache_blocking",),
        messages=(r"Cannot convert complex to float",),
        applies=lambda c: frozen_cpp(c) and c.inputs[0].shape[-1] == 0,
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_k0_crash.py (not yet filed upstream): get_cache_blocking "
                 "raises 'Cannot convert complex to float' for K == 0",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-n0-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"division by zero", r"failed to (compile|run)"),
        applies=lambda c: frozen_cpp(c) and c.inputs[1].shape[-1] == 0,
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_n0_compile_error.py (not yet filed upstream): the kernel's "
                 "constexpr Nt_blocks is 0 and num_Nt_blocks divides by it; the C++ does not compile",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-m0-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"division by zero", r"failed to (compile|run)"),
        applies=lambda c: (frozen_cpp(c) and not (c.dynamic or c.mark_dynamic)
                           and any(linear_rows(c, a) == 0 for a, *_ in calls(c))),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_m0_compile_error.py (not yet filed upstream; found by the README's CPU "
                 "campaign): with M == 0 the kernel's constexpr Mc_blocks is 0 and num_Mc_blocks divides by it",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-n0-dynamic-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGFPE:(mm|addmm|matmul)",),
        applies=lambda c: (frozen_cpp(c) and "ATEN" in backends(c) and 0 in c.inputs[1].shape[-2:]
                           and c.inputs[0].dtype in HALF and bool(c.dynamic or c.mark_dynamic or c.second_call)),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_frozen_n0_dynamic_sigfpe.py (not yet filed upstream): with M symbolic the CPP "
                 "kernel's division by the zero number of N blocks (or K blocks: a K == 0 weight dies the same "
                 "way, seen in a CPU campaign) happens at run time, while it is benchmarked",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-half-linear-empty-weight-onednn",
        oracles=("crash",),
        signatures=(r"crash:RuntimeError:[\w/.]+:\w+",),
        messages=(r"could not create a primitive descriptor",),
        applies=lambda c: (frozen_half_product(c) and any(0 in w.shape for w in c.inputs[1::2])) or (
            0 in c.inputs[1].shape and frozen_linear(c, ("float32",)) and bool(c.dynamic or c.mark_dynamic
                                                                               or c.second_call)),
        untrigger=unfrozen,
        tracking="repros/freezing_half_linear_empty_weight_onednn.py (not yet filed upstream): freezing packs a "
                 "bf16/fp16 weight (or, with M dynamic, a float32 one) with K == 0 or N == 0 for oneDNN's inner "
                 "product, which cannot build it (hosts with oneDNN bf16/fp16, either linear of an mm_plus_mm "
                 "too; float32 with dynamic M on any)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-mkl-linear-n0-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGFPE:(mm|addmm|matmul)",),
        applies=lambda c: (frozen_linear(c, ("float32",)) and c.inputs[1].shape[-1] == 0
                           and any(linear_rows(c, a) > 128 for a, *_ in calls(c))),
        untrigger=unfrozen,
        tracking="repros/freezing_mkl_linear_n0_sigfpe.py (not yet filed upstream): freezing a float32 "
                 "mm weight with N == 0 for MKL's linear divides by zero (SIGFPE) once M > 128",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-mkl-linear-m0-sigfpe",
        oracles=("process",),  # the process dies: campaigns see it; in-process property tests skip it
        signatures=(r"killed:SIGFPE:(mm|addmm|matmul)",),
        applies=lambda c: (frozen_linear(c, ("float32",)) and any(linear_rows(c, a) == 0 for a, *_ in calls(c))
                           and c.inputs[1].shape[0] * c.inputs[1].shape[1] >= MKL_M0_PACK_MIN_WEIGHT),
        untrigger=unfrozen,
        tracking="repros/freezing_mkl_linear_m0_sigfpe_plain.py (not yet filed upstream; found by CI on an "
                 "AVX-512 Xeon): freezing packs a float32 weight for MKL with batch size M == 0 "
                 "(torch.ops.mkl._mkl_reorder_linear_weight(w, 0)) and the process dies with SIGFPE",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-empty-dim-crash",
        oracles=("crash",),
        signatures=(r"crash:AssertionError:codegen/cpp_template_kernel\.py:\w+", r"crash:ZeroDivisionError:[\w/.]+:\w+",
                    r"crash:TypeError:codegen/cpp_gemm_template\.py:get_cache_blocking",
                    r"crash:AssertionError:lowering\.py:slice_"),  # a matmul by an (K, 0) weight, cat_mm_rows
        messages=(r"View\(", r"division by zero|modulo by zero", r"Cannot convert complex to float",
                  r"target: aten\.bmm\.default"),
        applies=lambda c: (cpu_cpp_batched(c)
                           and any(0 in (a.shape[-2], a.shape[-1], b.shape[-1]) for a, b, *_ in calls(c))),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_bmm_empty_dim_crash.py (not yet filed upstream): lowering a bmm with CPP "
                 "choices and M, N or K == 0 raises AssertionError (View) or ZeroDivisionError (with K == 0 "
                 "and symbolic sizes, get_cache_blocking's L2 / (Mr * Kt_bytes) is sympy's complex infinity: "
                 "TypeError)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-epilogue-input-mutation-crash",
        oracles=("crash", "numerics"),
        signatures=(r"crash:AssertionError:ir\.py:indexer",
                    r"choice-crash:\w+@CppTemplateCaller:AssertionError"),  # the CPP choice alone, when ATen won
        applies=lambda c: cpu_cpp_batched(c) and (("mutate_input" in c.consumers and len(c.consumers) > 1)
                                                  or (c.spelling == "out" and bool(c.consumers))),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_bmm_epilogue_input_mutation_crash.py (not yet filed upstream): a CPP bmm "
                 "with a pointwise epilogue, then an in-place mutation of its input: AssertionError in ir.py; "
                 "the out= buffer's update is such a mutation (a 5-minute CPU noise campaign, seed 3, 2.13: "
                 "bmm (8, 13, 65) x (8, 65, 257), out= and add_bias_row)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-dynamic-batch-stride-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"ks\d+. was not declared", r"failed to (compile|run)"),
        applies=lambda c: (cpu_cpp_batched(c) and c.op != "baddbmm" and not c.dynamic and len(c.inputs[0].shape) == 3
                           and bool(c.second_call) and c.second_call[0].stride[0] != c.inputs[0].stride[0]),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_bmm_dynamic_batch_stride_compile_error.py (not yet filed upstream): the "
                 "recompile makes x's batch stride symbolic; the CPP kernel uses it undeclared",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-bmm-size1-batch-stride-compile-error",
        oracles=("crash", "numerics", "template_presence"),
        signatures=CPP_COMPILE_ERROR,
        messages=(r"ks\d+. was not declared", r"failed to (compile|run)"),
        applies=lambda c: (cpu_cpp_batched(c) and c.op == "bmm" and len(c.inputs[0].shape) == 3
                           and c.inputs[0].shape[0] == 1 and c.inputs[0].stride[0] != span(c.inputs[0])
                           and (c.dynamic or any(i == 0 for i, _ in c.mark_dynamic))),
        untrigger=lambda c: with_input(c, 0,
                                       lambda t: TensorSpec(t.shape, (span(t), *t.stride[1:]), t.offset, t.dtype)),
        tracking="repros/cpp_bmm_dynamic_batch_stride_compile_error.py (not yet filed upstream; the same cause, "
                 "found by a CPU campaign): x has one batch whose stride is not the dense one and a dynamic "
                 "(dynamic=True or marked) dim, so its batch stride is symbolic; the CPP kernel uses it undeclared",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-half-bmm-m1-repeated-product-compile-error",
        oracles=("crash",),
        signatures=CPP_COMPILE_ERROR[:1],
        messages=(r"conflicting declaration .*tmp_acc\d+_vec",),
        applies=half_reductions_twice,
        untrigger=without_repeated_reduction,
        tracking="repros/cpp_half_bmm_m1_repeated_product_compile_error.py (not yet filed upstream; found by a "
                 "10-minute CPU campaign): the same fp16/bf16 bmm with M == 1 twice in one graph (here "
                 "torch.cat([a @ b, a @ b], dim=-2)): the C++ kernel declares `tmp_acc0_vec` twice; also with "
                 "N == 1 and the product repeated along the columns (a seed-1 3-minute campaign: fp16 matmul, "
                 "x1 (9, 290, 1) non-dense), and in training: an addmm/baddbmm with a row-broadcast bias and "
                 "x1's first row added sums the gradient over the rows twice (a 5-minute noise campaign, seed 3; "
                 "no matmul needed: the backward of x + b + c[:1, :] in bf16 fails the same way)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-frozen-weight-storage-offset",
        oracles=("numerics",),
        # any choice's single-choice compile: the program's other selections (a cat's mm) still pick CPP
        signatures=PRODUCT_WRONG_VALUES,
        applies=lambda c: frozen_cpp(c) and c.inputs[1].offset != 0,  # mm_plus_mm: x0 @ x1 is the linear
        untrigger=weight_at_offset_zero,
        tracking="repros/cpp_gemm_frozen_weight_offset.py (not yet filed upstream; "
                 "related: https://github.com/pytorch/pytorch/pull/159233): the CPP GEMM template reads a "
                 "frozen weight from the start of its storage (with NaN there, the result is NaN)",
        torch_versions=("2.11", "2.13"),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-linear-binary-m0-crash",
        oracles=("crash",),
        signatures=(r"crash:AssertionError:codegen/cpp_template\.py:generate",),
        messages=(r"_frozen_param\d+', '\w+', 'buf_out\d+'\]\)",),
        applies=lambda c: (frozen_cpp(c) and c.inputs[0].dtype in HALF
                           and any(linear_rows(c, a) == 0 for a, *_ in calls(c))),
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_linear_binary_m0_crash.py (not yet filed upstream; found by the CPU mm_plus_mm "
                 "cases): a frozen fp16/bf16 linear followed by an add (x @ W + y, fused into mkldnn's "
                 "linear_binary) with M == 0: the CPP template's kernel call misses the added operand",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="freezing-mkl-pack-integer-weight-crash",
        oracles=("crash",),
        signatures=(r"crash:RuntimeError:[\w/.]+:\w+",),
        messages=(r"reorder_linear_weight: weight's dtype should be float",  # MKL; oneDNN (a dynamic batch):
                  r"itensor_view_from_dense expects float/bfloat16/half/int8/fp8 tensor input",  # and for uint8:
                  r"could not create a primitive descriptor for the inner product forward propagation primitive"),
        applies=frozen_integer_linear,
        untrigger=unfrozen,
        tracking="repros/freezing_mkl_pack_integer_weight_crash.py (not yet filed upstream; found by reading "
                 "mkldnn_fusion.py for the integer products this suite draws since 2026-12-07): freezing packs a "
                 "frozen integer linear weight for MKL or oneDNN (`_is_packable_linear` refuses float64 only), "
                 "and _mkl_reorder_linear_weight raises 'weight's dtype should be float' while compiling (with a "
                 "dynamic batch, oneDNN's packing: 'itensor_view_from_dense expects float/...')",
        torch_versions=("2.13",),
        devices=("cpu",),
    ),
    KnownBug(
        name="cpp-gemm-int8-product-compensation-crash",
        oracles=("crash",),
        signatures=(r"crash:KeyError:codegen/cpp_gemm_template\.py:\w+",
                    r"crash:IndexError:codegen/cpp_gemm_template\.py:(<genexpr>|add_choices)"),
        messages=(r"_BMatrixCompens", r"list index out of range"),  # oneDNN's packed int8 linear: add_choices
        # reads the quantized linear's scale/zero-point inputs (a dynamic batch, whose packing succeeds for int8)
        applies=int8_cpp_product,
        untrigger=without_backend("CPP"),
        tracking="repros/cpp_gemm_int8_product_compensation_crash.py (not yet filed upstream; found by reading "
                 "utils.py use_cpp_gemm_template): the CPP GEMM template takes int8/uint8 operands for the "
                 "quantized linear, whose lowering registers the weight's compensation constant; a plain int8 or "
                 "uint8 bmm (or frozen addmm) gets the template too, and lowering fails with KeyError "
                 "'<weight>_BMatrixCompens' (a frozen int8 linear with a dynamic batch, which oneDNN packs: "
                 "IndexError in add_choices, reading the quantized linear's scale inputs)",
        torch_versions=("2.11", "2.13"),  # 2.11: seen in the H100 test run of 2026-12-07
        devices=("cpu",),
    ),
    KnownBug(
        name="cpu-bmm-vector-sum-promotes-integers",
        oracles=("numerics",),
        signatures=(r"output-meta:(mm|bmm|baddbmm|matmul)(@.+)?",),
        messages=(r"compiled (\(.*\)) torch\.int64, eager \1 torch\.u?int(32|16|8)$",),  # its dtype, nothing else
        applies=narrow_integer_bmm_vector,
        untrigger=in_int64,
        tracking="repros/cpu_bmm_vector_sum_promotes_integers.py (not yet filed upstream; found by a CPU run of "
                 "the integer products): tuned_bmm (kernel/bmm.py) lowers a CPU bmm with M == 1 or N == 1 as "
                 "sum(a * b), and an integer sum is int64, so an int32/int16/int8/uint8 bmm (einsum, matmul, "
                 "a baddbmm program's second x0 @ x1) "
                 "returns int64 where eager returns the operands' dtype (the CUDA branch checks for float dtypes)",
        torch_versions=("2.11", "2.13"),  # 2.11: seen in the H100 test run of 2026-12-07
        devices=("cpu",),
    ),
)
