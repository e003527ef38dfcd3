"""How a model computes while it trains, not what it is: the attention kernel (the training key
``attn_implementation``) and dropout with a cheaper mask on the CPU (``fast_dropout``). Neither is saved with the model.

`torch.nn.Dropout` draws its mask with ``bernoulli_``: 32 random bits and a float compare per element from a generator
that draws on one thread, a large share of a small model's training step on a CPU (BENCHMARKS.md). `FastDropout` takes
16 bits per element of splitmix64 words that integer tensor operations compute from one key per mask, on every thread,
and compares them as integers: the same distribution with ``p`` rounded to 1/65,536, other random draws. Under eager
attention (``attn_implementation: eager``) the attention probabilities are dropped the same way. It holds no weights and
is the identity in eval mode, so a model trained with it saves, loads and predicts as any other.
"""

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface, eager_mask

BITS = 16
LEVELS = 1 << BITS
# splitmix64 (Steele, Lea and Flood 2014): the i-th word of a mask is MIX(key + (i + 1) * GAMMA), the key drawn from
# torch's default CPU generator once per mask. Integer tensor operations compute it, so every thread draws and any
# device gives the same words for the same seed (torch's CPU generator draws on one thread). The constants are the
# 64-bit patterns as int64: the arithmetic wraps as uint64's would.
GAMMA = 0x9E3779B97F4A7C15 - (1 << 64)
MIX = ((30, 0xBF58476D1CE4E5B9 - (1 << 64)), (27, 0x94D049BB133111EB - (1 << 64)), (31, None))
# the attention kernel under which attention probabilities are dropped by `fast_dropout_mask` (set by
# `use_training_kernels` for attn_implementation "eager" with fast_dropout)
EAGER_FAST_DROPOUT = "eager_fast_dropout"

_steps: dict[torch.device, torch.Tensor] = {}  # (i + 1) * GAMMA for the longest mask yet, per device


def random_bits(n: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``n`` int16 values, uniform over their range, on ``device``: the 16-bit quarters of splitmix64 words 1 to
    ceil(n / 4) from a key drawn from torch's default CPU generator."""
    words, device = (n + 3) // 4, torch.device(device)
    steps = _steps.get(device)
    if steps is None or len(steps) < words:
        steps = _steps[device] = torch.arange(1, max(words, 1 << 16) + 1, dtype=torch.int64, device=device) * GAMMA
    key = int(torch.empty((), dtype=torch.int64).random_(-(1 << 63), None))
    z = steps[:words] + key
    shifted = torch.empty_like(z)
    for shift, multiplier in MIX:  # z ^= z >> shift (logical), then z *= multiplier
        torch.bitwise_right_shift(z, shift, out=shifted).bitwise_and_((1 << (64 - shift)) - 1)
        z.bitwise_xor_(shifted)
        if multiplier is not None:
            z.mul_(multiplier)
    return z.view(torch.int16)[:n]


def fast_dropout_mask(x: torch.Tensor, p: float) -> torch.Tensor:
    """``x`` with each element zeroed with probability ``round(p * 65536) / 65536`` and the rest scaled by
    ``1 / (1 - p)``."""
    # the bits are int16 in [-32768, 32767]: an element is kept when its bits are at least the threshold
    keep = random_bits(x.numel(), x.device).view(x.shape) >= round(p * LEVELS) - LEVELS // 2
    return x * keep.to(x.dtype).mul_(1.0 / (1.0 - p))


class FastDropout(nn.Module):
    """Zeroes each element with probability ``round(p * 65536) / 65536`` in training and scales the rest by
    ``1 / (1 - p)``; the identity in eval mode."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability p={p} must be in [0, 1)")
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        return fast_dropout_mask(x, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def eager_attention_fast_dropout(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs,
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' eager attention (softmax of the scaled products plus the additive mask, times the values) with
    the attention probabilities dropped by `fast_dropout_mask`: the ``attn_implementation`` `EAGER_FAST_DROPOUT`."""
    weights = torch.matmul(query, key.transpose(2, 3)) * (query.size(-1) ** -0.5 if scaling is None else scaling)
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = nn.functional.softmax(weights, dim=-1)
    if module.training and dropout > 0.0:
        weights = fast_dropout_mask(weights, dropout)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


AttentionInterface.register(EAGER_FAST_DROPOUT, eager_attention_fast_dropout)
AttentionMaskInterface.register(EAGER_FAST_DROPOUT, eager_mask)


def use_fast_dropout(model: nn.Module) -> nn.Module:
    """Replace every `nn.Dropout` module of ``model`` by a `FastDropout` of the same ``p`` (in place; returns
    ``model``). Dropout computed by functions keeps ``bernoulli_``: BART's, and the attention probabilities' unless
    `use_training_kernels` gives the model eager attention."""
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
    with ``fast_dropout``, `FastDropout` for every `nn.Dropout` and, under eager attention, `fast_dropout_mask` for the
    attention probabilities (the kernel `EAGER_FAST_DROPOUT`). A saved model loads with its default kernel."""
    if fast_dropout and attn_implementation == "eager":
        attn_implementation = EAGER_FAST_DROPOUT
    if attn_implementation:
        model.set_attn_implementation(attn_implementation)
    return use_fast_dropout(model) if fast_dropout else model


__all__ = ["FastDropout", "use_fast_dropout", "use_training_kernels"]
