"""Turn the Triton kernel inductor generates for triton_addmm_alpha_beta_m1_plain.py into a standalone
Triton script (torch for the tensors, triton for the kernel; no inductor), write it and run it.

It compiles the pinned case (BLOCK_M=16, BLOCK_N=16, BLOCK_K=128), takes the template kernel's source from
the generated code (torch._inductor.utils.run_and_get_code), drops inductor's launcher decorator, and
launches the kernel with the grid, num_warps and num_stages inductor used, on the same integer inputs.
Exit status (the standalone script's): 1 when the kernel alone computes wrong values (a kernel or Triton
bug: file that script), 0 when it is right (then the bug is in how inductor launches it).
Usage: python triton_addmm_alpha_beta_m1_kernel.py [OUT_DIR]   (CUDA; writes OUT_DIR/triton_mm_standalone.py)
"""
import ast
import re
import subprocess
import sys
from pathlib import Path

import torch
from torch._inductor.utils import run_and_get_code

INPUTS = """gen = torch.Generator().manual_seed(0)
a = torch.randint(-2, 3, (1, 177), generator=gen).half().cuda()
b = torch.randint(-2, 3, (177, 16), generator=gen).half().cuda()[:, :15]  # leading dimension 16
bias = torch.randint(-2, 3, (15,), generator=gen).half().cuda()
"""
KERNEL = re.compile(r"async_compile\.triton\('(\w+)', '''(.*?)''', device_str='cuda'\)", re.S)
SIZE_STRIDE = re.compile(r"assert_size_stride\((arg\d+_\d+), (\([^)]*\)), (\([^)]*\))")
BUFFER = re.compile(r"(buf\d+) = empty_strided_cuda\((\([^)]*\)), (\([^)]*\)), (torch\.\w+)\)")


def standalone(wrapper: str, inputs: dict) -> str:
    """The standalone script for the template kernel in inductor's generated `wrapper`. `inputs`: the
    tensors INPUTS defines, by name (each has its own size and stride, so graph inputs are matched by them)."""
    name, source = next((n, s) for n, s in KERNEL.findall(wrapper) if "tl.dot" in s)
    launch = next(ln.strip() for ln in wrapper.splitlines() if ln.strip().startswith(f"{name}.run("))
    *args, g0, g1, g2 = [ast.unparse(x).replace("reinterpret_tensor(", "torch.as_strided(")
                         for x in ast.parse(launch).body[0].value.args]
    params = dict(re.findall(r"(num_warps|num_stages)=(\d+)", source))
    body = source[source.index("@triton.jit"):]
    helpers = [ln for ln in source.splitlines() if ln.startswith("from torch._inductor.runtime")
               and any(w in body for w in ("triton_helpers", "libdevice", "tl_math"))]
    graph_inputs = [f"{arg} = " + next(n for n, t in inputs.items()
                                       if (tuple(t.shape), t.stride())
                                       == (ast.literal_eval(size), ast.literal_eval(stride)))
                    for arg, size, stride in SIZE_STRIDE.findall(wrapper)]
    buffers = [f"{buf} = torch.empty_strided({size}, {stride}, dtype={dtype}, device='cuda')"
               for buf, size, stride, dtype in BUFFER.findall(wrapper)]
    out = next(x for x in args if x.startswith("buf"))
    return "\n".join([
        f'"""Standalone Triton kernel {name}: what inductor (torch {torch.__version__}) generated for an fp16',
        "addmm with M=1, K=177, N=15 under the config BLOCK_M=16, BLOCK_N=16, BLOCK_K=128, launched as inductor",
        'launches it. Exit status 1 while the kernel computes wrong values (small integers: the result is exact)."""',
        "import sys", "", "import torch", "import triton", "import triton.language as tl", *helpers, "", "",
        body.rstrip(), "", "", INPUTS.rstrip(), *graph_inputs, *buffers,
        f"{name}[({g0}, {g1}, {g2})]({', '.join(args)}, num_warps={params['num_warps']}, "
        f"num_stages={params['num_stages']})",
        "exact = 2.0 * bias.double() + 2.0 * (a.double() @ b.double())",
        f"wrong = int(({out}.double() != exact).sum())",
        f"print('BUG' if wrong else 'OK', f'{{wrong}} of {{exact.numel()}} elements wrong: got "
        f"{{{out}.flatten()[:6].tolist()}}, exact {{exact.flatten()[:6].tolist()}}', '| triton', "
        "triton.__version__, '|', torch.cuda.get_device_name())",
        "sys.exit(1 if wrong else 0)", ""])


if __name__ == "__main__":
    out_dir = Path(sys.argv[1] if sys.argv[1:] else ".")
    print("torch", torch.__version__, "|", torch.cuda.get_device_name())
    namespace = {"torch": torch}
    exec(INPUTS, namespace)  # the very inputs the standalone script builds
    tensors = {k: namespace[k] for k in ("bias", "a", "b")}
    with torch._inductor.config.patch({"max_autotune": True, "max_autotune_gemm_backends": "TRITON",
                                       "fx_graph_cache": False,
                                       "test_configs.autotune_choice_desc_regex":
                                           "BLOCK_K=128, BLOCK_M=16, BLOCK_N=16"}):
        _, codes = run_and_get_code(torch.compile(lambda x, y, z: torch.addmm(x, y, z, alpha=2.0, beta=2.0)),
                                    tensors["bias"], tensors["a"], tensors["b"])
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "triton_mm_generated_wrapper.py").write_text("\n".join(codes))  # to send back if the next step fails
    script = out_dir / "triton_mm_standalone.py"
    script.write_text(standalone("\n".join(codes), tensors))
    print(f"wrote {script}; running it:", flush=True)
    sys.exit(subprocess.run([sys.executable, str(script)], check=False).returncode)
