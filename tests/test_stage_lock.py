"""One process per stage (issue 29, item 8): a stage's lock is held by one process at a time, a lock left by a dead
process is taken over, and a study that finds a stage taken waits for it or moves on to the next model."""

import logging
import os
import subprocess
import sys

import pytest

from csc_hf.study import Preset, Study
from csc_hf.study import run as study_run
from csc_hf.study.progress import StageLock
from csc_hf.study.run import Busy

HOLD = """
import sys
from csc_hf.study.progress import StageLock
lock = StageLock(sys.argv[1])
assert lock.acquire()
print("held", flush=True)
sys.stdin.read()  # holds the lock until it is killed
"""


def test_a_stage_lock_has_one_owner_at_a_time(tmp_path):
    first, second = StageLock(tmp_path), StageLock(tmp_path)
    assert first.acquire() and first.held
    assert not second.acquire() and not second.held
    assert second.owner() == os.getpid()  # the owner's pid is in the file
    first.release()
    assert not (tmp_path / "stage.lock").exists()  # released: the file is gone
    assert second.acquire() and second.owner() == os.getpid()
    second.release()


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "stage.lock").write_text(f"{dead.pid}\n", encoding="utf-8")  # what a killed owner leaves
    lock = StageLock(tmp_path)
    assert lock.acquire() and lock.owner() == os.getpid()
    lock.release()


def test_a_stage_another_process_runs_is_busy_until_it_dies(tmp_path):
    """A real second process holds a stage's lock: the study's claim fails naming its pid (or, waiting, it would wait);
    once that process is killed (kill -9: it cannot clean up), the stage is taken over and run."""
    study = Study(Preset(name="x"), tmp_path / "run")
    stage = study.stage("pretrain", {"x": 1})
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(stage.directory)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        study.wait = False
        with pytest.raises(Busy, match=f"is being run by process {holder.pid}"):
            study.pending(stage, "pretrain")
    finally:
        holder.kill()
        holder.wait()
    assert (stage.directory / "stage.lock").is_file()  # left behind with the dead pid
    study.wait = True
    assert study.pending(stage, "pretrain")  # taken over at once
    stage.finish({})
    assert stage.done and not (stage.directory / "stage.lock").exists()
    assert not study.pending(stage, "pretrain")  # finished: never run twice


def test_a_waiting_study_takes_the_stage_when_it_is_free(tmp_path, monkeypatch, caplog):
    study = Study(Preset(name="x"), tmp_path / "run")
    stage = study.stage("build", {})
    other = StageLock(stage.directory)  # another owner (a lock is per open file, so this stands for a process)
    assert other.acquire()
    monkeypatch.setattr(study_run.time, "sleep", lambda seconds: other.release())  # it finishes while we wait
    with caplog.at_level(logging.INFO, logger="csc_hf"):
        assert study.pending(stage, "build")
    assert f"waiting for {stage.directory.name}: process {os.getpid()} runs it" in caplog.text
    stage.finish({})


def test_a_stage_finished_while_waiting_is_not_run_again(tmp_path, monkeypatch):
    """Two identical runs started together: the one that waited uses the other's finished stage, never redoes it."""
    study = Study(Preset(name="x"), tmp_path / "run")
    stage, other = study.stage("build", {}), study.stage("build", {})  # the same folder; `other` stands for a process
    assert other.lock.acquire()
    monkeypatch.setattr(study_run.time, "sleep", lambda seconds: other.finish({}))  # it finishes while we wait
    assert not study.pending(stage, "build")
    assert stage.done and not stage.lock.held and not (stage.directory / "stage.lock").exists()


def test_a_study_moves_on_from_a_busy_model_and_comes_back(tmp_path):
    study, calls = Study(Preset(name="x"), tmp_path / "run"), []

    def run(variant, seed):
        calls.append((variant, study.wait))
        if variant == "bart" and not study.wait:
            stage = study.stage("train-bart", {})
            raise Busy(stage)

    study.each([("bert", 0), ("bart", 0), ("plome", 0)], run)
    assert calls == [("bert", False), ("bart", False), ("plome", False)] and study.wait
    study.each([("bert", 1)], run)  # the next stage's models come before the put-off one ...
    study.finish_put_off()  # ... which is waited for once nothing else is left
    assert calls[3:] == [("bert", False), ("bart", True)] and not study.put_off and study.wait


def test_the_training_sets_stage_moves_on_from_a_busy_model(tmp_path, monkeypatch):
    """A second process on the same run reaches a training-set model that the first one trains: it goes on with the
    next set's model and comes back to it at the end, as it does in the grid."""
    study, calls = Study(Preset.load("smoke"), tmp_path / "run"), []
    sets = list(study.preset.training_sets_study.sets)

    def finetune(variant, seed, pretrained, augmented=False, training_set=None):
        if training_set == sets[0] and not study.wait:
            raise Busy(study.stage(f"train-{variant}-{training_set}", {}))
        calls.append((training_set or ("augmented" if augmented else "grid"), variant, study.wait))

    monkeypatch.setattr(study, "finetune", finetune)
    monkeypatch.setattr(study, "evaluate", lambda *args, **kwargs: None)
    grid = study.grid(None, None)
    study.run_training_sets(None, None, grid)
    study.finish_put_off()
    assert study.training_sets_results(grid) is None  # nothing finished to collect
    trained = [(name, variant, waited) for name, variant, waited in calls if name != "grid"]
    first = [(name, v, False) for name in sets[1:] for v in study.preset.training_sets_study.variants_of(name)]
    assert trained[: len(first)] == first  # the busy set's models are put off ...
    assert all(name == sets[0] and waited for name, _, waited in trained[len(first) :])  # ... then waited for
    assert study.wait


def test_a_busy_grid_model_is_waited_for_after_every_other_stage(tmp_path, monkeypatch):
    """A second process that meets a grid model the first one trains does not wait for it before the other stages:
    it trains the other models' training sets (and the augmentation stage's models) first, and comes back to the busy
    model and to the models that need it once nothing else is left."""
    study, calls = Study(Preset.load("smoke"), tmp_path / "run"), []
    study.estimate = False

    def finetune(variant, seed, pretrained, augmented=False, training_set=None):
        if variant == "bert" and not (augmented or training_set) and not study.wait:
            raise Busy(study.stage("train-bert", {}))  # the grid's bert: another process trains it
        calls.append((training_set or ("augmented" if augmented else "grid"), variant, study.wait))

    monkeypatch.setattr(study, "build", lambda: None)
    monkeypatch.setattr(study, "pretrain", lambda: None)
    monkeypatch.setattr(study, "augment", lambda: pytest.fail("the augment stage is not part of this test"))
    monkeypatch.setattr(study, "run_augmentation", lambda *args: None)
    monkeypatch.setattr(study, "finetune", finetune)
    monkeypatch.setattr(study, "evaluate", lambda *args, **kwargs: None)
    with pytest.raises(study_run.Unfinished):  # nothing evaluated: no results to write
        study._run(study.grid(None, None))
    waited = [call for call in calls if call[2]]
    assert ("edits", "bart", False) in calls  # another variant's training set, before any wait
    assert calls.index(("edits", "bart", False)) < calls.index(waited[0])
    assert waited[0] == ("grid", "bert", True)  # the busy model first, then the sets that start from it
    assert ("pe20", "bert", True) in waited and all(v == "bert" for _, v, _ in waited)
    assert ("pe20", "bert", False) not in calls  # it starts from the busy model: put off with it
