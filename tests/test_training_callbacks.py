"""Checkpoints by time (csc_hf.training.run.SaveEvery, the ``save_every_seconds`` key) in a real Trainer run, with a
clock the test moves, and a training resumed from a checkpoint made by time ends with the same bytes; the seconds a
training took over its pieces (csc_hf.training.run.TrainingClock)."""

import shutil

import pytest
import torch
from conftest import train_tiny
from transformers import Trainer, TrainerCallback, TrainingArguments

from csc_hf.training import check_config
from csc_hf.training.run import ELAPSED, SaveEvery, TrainingClock, _callbacks


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)

    def forward(self, x, y):
        return {"loss": torch.nn.functional.mse_loss(self.linear(x).squeeze(-1), y)}


class Clock:
    """A clock that a callback moves by `step` seconds at the start of every training step."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now


class Tick(TrainerCallback):
    def __init__(self, clock: Clock):
        self.clock = clock

    def on_step_begin(self, args, state, control, **kwargs):
        self.clock.now += self.clock.step


def regression_trainer(out, clock: Clock, callbacks: list[TrainerCallback], **args) -> Trainer:
    """A 10-step Trainer of the regression over 40 random examples; `clock` moves at the start of every step."""
    torch.manual_seed(0)
    data = [{"x": torch.randn(4), "y": torch.randn(())} for _ in range(40)]
    arguments = TrainingArguments(
        output_dir=str(out),
        max_steps=10,
        per_device_train_batch_size=4,
        use_cpu=True,
        report_to="none",
        disable_tqdm=True,
        save_total_limit=None,
        **args,
    )
    return Trainer(model=Regression(), args=arguments, train_dataset=data, callbacks=[Tick(clock), *callbacks])


def train_steps(tmp_path, seconds_per_step: float, save_every: float, **args) -> list[int]:
    """Train 10 steps; the steps whose checkpoints were written."""
    clock = Clock(seconds_per_step)
    regression_trainer(tmp_path, clock, [SaveEvery(save_every, clock=clock)], **args).train()
    return sorted(int(p.name.split("-")[1]) for p in tmp_path.glob("checkpoint-*"))


def test_a_resumed_training_counts_the_seconds_of_its_earlier_pieces(tmp_path):
    """40 s a step, a checkpoint every 2 steps: checkpoint 4 keeps 160 s; a run resumed from it (its clock elsewhere)
    counts them as earlier and ends at the uninterrupted run's 400 s."""

    def run(out, start: float, resume: str | None = None) -> TrainingClock:
        clock = Clock(40.0)
        clock.now = start
        timer = TrainingClock(clock=clock)
        trainer = regression_trainer(out, clock, [timer], save_strategy="steps", save_steps=2)
        trainer.train(resume_from_checkpoint=resume)
        return timer

    whole = run(tmp_path / "whole", start=0.0)
    assert (whole.earlier, whole.seconds) == (0.0, 400.0)
    assert (tmp_path / "whole" / "checkpoint-4" / ELAPSED).read_text() == '{"seconds": 160.0}\n'
    shutil.copytree(tmp_path / "whole" / "checkpoint-4", tmp_path / "resumed" / "checkpoint-4")
    resumed = run(tmp_path / "resumed", start=1000.0, resume=str(tmp_path / "resumed" / "checkpoint-4"))
    assert (resumed.earlier, resumed.seconds) == (160.0, 400.0)


def test_saves_by_time_when_steps_are_slow(tmp_path):
    # 40 s a step, a checkpoint every 100 s: steps 3 (120 s), 6 and 9; the last step by the Trainer's own rule
    assert train_steps(tmp_path, 40.0, 100.0, save_strategy="steps", save_steps=1000) == [3, 6, 9, 10]


def test_step_checkpoints_reset_the_clock(tmp_path):
    # save_steps 2 comes first every time: time alone never adds a checkpoint
    assert train_steps(tmp_path, 40.0, 100.0, save_strategy="steps", save_steps=2) == [2, 4, 6, 8, 10]


def test_fast_steps_add_nothing(tmp_path):
    assert train_steps(tmp_path, 1.0, 100.0, save_strategy="steps", save_steps=1000) == [10]


def test_a_run_without_checkpoints_stays_so(tmp_path):
    assert train_steps(tmp_path, 40.0, 100.0, save_strategy="no") == []


def test_rejects_a_period_that_is_not_positive():
    with pytest.raises(ValueError, match="seconds=0"):
        SaveEvery(0)


def test_the_key_adds_the_callback():
    assert any(isinstance(c, SaveEvery) and c.seconds == 300 for c in _callbacks(300))
    assert not any(isinstance(c, SaveEvery) for c in _callbacks(0))
    with pytest.raises(ValueError, match="save_every_seconds=-1"):
        check_config({"output_dir": "x", "save_every_seconds": -1})


def test_a_resume_from_a_checkpoint_made_by_time_gives_the_same_bytes(tmp_path, small_params):
    """A fine-tuning with a checkpoint by time after every step (save_steps far away) ends with the same weights as
    one without checkpoints, and so does a run resumed from its checkpoint of step 5 (as `tests/test_resume.py`'s
    study: `bert`)."""

    def run(out, **keys):
        return train_tiny(small_params, out, task="correction", variant="bert", mask_rate=0.0, max_steps=8, **keys) / (
            "model.safetensors"
        )

    plain = run(tmp_path / "plain", save_strategy="no").read_bytes()
    timed = run(tmp_path / "timed", save_strategy="steps", save_steps=1000, save_every_seconds=1e-9)
    assert sorted(p.name for p in timed.parent.glob("checkpoint-*")) == [f"checkpoint-{n}" for n in range(1, 9)]
    assert timed.read_bytes() == plain
    shutil.copytree(tmp_path / "timed" / "checkpoint-5", tmp_path / "resumed" / "checkpoint-5")
    resumed = run(tmp_path / "resumed", save_strategy="steps", save_steps=1000, save_every_seconds=0)
    assert sorted(p.name for p in resumed.parent.glob("checkpoint-*")) == ["checkpoint-5", "checkpoint-8"]
    assert resumed.read_bytes() == plain
