"""Which precision training and inference compute in: ``auto`` (bf16 autocast where the hardware computes bf16,
fp32 elsewhere), ``bf16`` or ``fp32``. Weights stay fp32 in training; inference may hold them in bf16 instead of
casting them under autocast (``bf16_weights``: :func:`check_bf16_weights`)."""

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


def check_bf16_weights(precision: str, bf16_weights: bool) -> bool:
    """``bf16_weights`` once checked against ``precision``: a bool, and not asked of an ``fp32`` inference. With it a
    model whose forward passes compute in bf16 (:func:`inference_bf16`) holds its weights in bf16 and runs without
    autocast, LayerNorm and softmax in bf16 too; where ``auto`` resolves to fp32 the weights stay as they are."""
    check_precision(precision)
    if not isinstance(bf16_weights, bool):
        raise TypeError(f"bf16_weights must be True or False, not {bf16_weights!r}")
    if bf16_weights and precision == "fp32":
        raise ValueError(
            "bf16_weights=True holds the weights in bf16: it contradicts precision=fp32 (use auto or bf16)"
        )
    return bf16_weights


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


__all__ = ["PRECISIONS", "check_bf16_weights", "check_precision", "inference_bf16", "resolved"]
