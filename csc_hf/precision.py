"""Which precision training and inference compute in: ``auto`` (bf16 autocast where the hardware computes bf16,
fp32 elsewhere), ``bf16`` or ``fp32``. Weights stay fp32 either way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .hardware import cpu_has_bf16

if TYPE_CHECKING:
    import torch

PRECISIONS = ("auto", "bf16", "fp32")


def check_precision(precision: str) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else a ValueError naming the choices."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision={precision!r}: choose one of {PRECISIONS}")
    return precision


def inference_bf16(precision: str, device: torch.device | str) -> bool:
    """Whether a model on ``device`` runs its forward passes under bf16 autocast: ``bf16`` always, ``auto`` on a
    CPU with bf16 in hardware or a CUDA device that supports it, ``fp32`` never."""
    import torch

    check_precision(precision)
    if precision != "auto":
        return precision == "bf16"
    kind = torch.device(device).type
    if kind == "cpu":
        return cpu_has_bf16()
    return kind == "cuda" and torch.cuda.is_bf16_supported()


def resolved(precision: str, device: torch.device | str = "cpu") -> str:
    """``bf16`` or ``fp32``: what ``precision`` computes in on ``device``."""
    return "bf16" if inference_bf16(precision, device) else "fp32"


__all__ = ["PRECISIONS", "check_precision", "inference_bf16", "resolved"]
