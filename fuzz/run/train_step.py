"""The training step of a training case (`Case.backward`), a function whose source the plain repro
scripts print as it is (fuzz.export.plain_render): it needs only torch (its annotations are strings)."""

from collections.abc import Callable, Sequence  # the annotations' names

import torch


def train(fn: "Callable[..., tuple[torch.Tensor, ...]]", args: "Sequence[torch.Tensor]", seed: int,
          magnitude: bool = False) -> "tuple[torch.Tensor, ...]":  # fn(*args), then backward: outputs, then each .grad
    for a in args:  # every float input requires grad; upstream gradients: integers in [-2, 2] from `seed`
        a.grad = None
        a.requires_grad_(a.is_floating_point())
    out = fn(*args)
    gen = torch.Generator().manual_seed(seed)
    up = [torch.randint(-2, 3, o.shape, generator=gen, dtype=torch.float64) for o in out]
    up = [(u.abs() if magnitude else u).to(o.dtype).to(o.device) for u, o in zip(up, out, strict=True)]
    torch.autograd.backward(out, up)
    grads = [a.grad for a in args]
    if any(g is None for g in grads):
        raise RuntimeError(f"backward left .grad None for inputs {[i for i, g in enumerate(grads) if g is None]}")
    return (*[o.detach() for o in out], *[g for g in grads if g is not None])
