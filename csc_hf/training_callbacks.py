"""Trainer callbacks for long runs on shared or slow CPUs.

    trainer.add_callback(SaveEvery(seconds=300))   # a checkpoint at least every 5 minutes of training, as well as
                                                   # every save_steps: a restart loses minutes, not a stage

`save_steps` alone sizes the loss of an interruption in steps, and a step's time varies 10x between a quiet AVX-512
CPU and a busy AVX2 one: 50 steps are half a minute on one and 6-8 minutes on the other. `SaveEvery` bounds it in
time. With several processes, the main process decides and every process follows (a checkpoint is a collective
operation: processes that disagree would wait for each other forever).
"""

from __future__ import annotations

import time

import torch
from transformers import TrainerCallback


class SaveEvery(TrainerCallback):
    """Ask the Trainer for a checkpoint once ``seconds`` of training have passed since the last one (or since the
    start of training), on top of its own ``save_strategy``; a run that saves no checkpoints (``save_strategy:
    no``) stays so."""

    def __init__(self, seconds: float, clock=time.monotonic):
        if not seconds > 0:
            raise ValueError(f"SaveEvery: seconds={seconds} must be positive")
        self.seconds, self.clock = seconds, clock
        self.last = clock()

    def on_train_begin(self, args, state, control, **kwargs):
        self.last = self.clock()

    def on_step_end(self, args, state, control, **kwargs):
        if args.save_strategy == "no":
            return control
        due = self.clock() - self.last >= self.seconds
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            flag = torch.tensor([int(due)])
            torch.distributed.broadcast(flag, src=0)  # the main process's clock decides for all
            due = bool(flag.item())
        if due:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        self.last = self.clock()


__all__ = ["SaveEvery"]
