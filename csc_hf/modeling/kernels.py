"""How a model computes while it trains, not what it is: the attention kernel (the training key
``attn_implementation``) and dropout with a cheaper mask on the CPU (``fast_dropout``). Neither is saved with the model.

`torch.nn.Dropout` draws its mask with ``bernoulli_``: 32 random bits and a float compare per element, a large share
of a small model's training step on a CPU (BENCHMARKS.md). `FastDropout` takes 16 random bits per element (two per
32-bit draw) and compares them as integers: the same distribution with ``p`` rounded to 1/65,536, other random draws.
It holds no weights and is the identity in eval mode, so a model trained with it saves, loads and predicts as any
other.
"""

import torch
from torch import nn

BITS = 16
LEVELS = 1 << BITS


class FastDropout(nn.Module):
    """Zeroes each element with probability ``round(p * 65536) / 65536`` in training and scales the rest by
    ``1 / (1 - p)``; the identity in eval mode."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability p={p} must be in [0, 1)")
        self.p = p
        # bits are int16 in [-32768, 32767]: an element is kept when its bits are at least the threshold
        self.threshold = round(p * LEVELS) - LEVELS // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        n = x.numel()
        # int32 over its whole range (random_() without bounds would draw [0, 2^31): half the 16-bit halves >= 0)
        words = torch.empty((n + 1) // 2, dtype=torch.int32, device=x.device).random_(-(2**31), 2**31)
        keep = words.view(torch.int16)[:n].view(x.shape) >= self.threshold
        return x * (keep.to(x.dtype) * (1.0 / (1.0 - self.p)))

    def extra_repr(self) -> str:
        return f"p={self.p}"


def use_fast_dropout(model: nn.Module) -> nn.Module:
    """Replace every `nn.Dropout` module of ``model`` by a `FastDropout` of the same ``p`` (in place; returns
    ``model``). Dropout computed by functions (attention probabilities, BART's) keeps ``bernoulli_``."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Dropout:
                replacement = FastDropout(child.p)
                replacement.train(child.training)
                setattr(module, name, replacement)
    return model


def use_training_kernels(
    model: nn.Module, attn_implementation: str | None = None, fast_dropout: bool = False
) -> nn.Module:
    """``model`` (changed in place; returned) with the attention kernel ``attn_implementation`` (None: its own) and,
    with ``fast_dropout``, `FastDropout` for every `nn.Dropout`. A saved model loads with its default kernel."""
    if attn_implementation:
        model.set_attn_implementation(attn_implementation)
    return use_fast_dropout(model) if fast_dropout else model


__all__ = ["FastDropout", "use_fast_dropout", "use_training_kernels"]
