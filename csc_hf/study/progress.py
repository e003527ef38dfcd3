"""The progress of a run: a stage folder, its ``done.json`` marker and the lock of the process running it
(:class:`Stage`, :class:`StageLock`), the stages a run goes through (:class:`Step`) and the progress line with elapsed
time and ETA (:class:`Progress`)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import hardware
from ..files import write_atomic
from ..run_layout import CHECKPOINT, DONE, LOCK, TRAINER_STATE


class StageLock:
    """Ownership of a stage folder by one process at a time. The file ``stage.lock`` holds the owner's pid; owning
    it is holding an exclusive ``flock`` on it, which the kernel grants to one process atomically and releases when
    that process ends, however it ends (kill -9 too): a lock left behind by a dead process is taken over at once, with
    no race between two processes that both find it stale. The owner removes the file when it releases it."""

    def __init__(self, directory: Path):
        self.path = Path(directory) / LOCK
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> bool:
        """Take the lock if no live process holds it (writing this process's pid into it); False when one does."""
        if self._fd is not None:
            return True
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try_lock(fd):
                os.close(fd)
                return False
            try:  # the previous owner may have removed the file between our open and our lock: lock the new one
                current = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return True

    def owner(self) -> int | None:
        """The pid written in the lock file (its owner, or the last one), or None."""
        try:
            return int(self.path.read_text(encoding="utf-8").split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def release(self) -> None:
        """Remove the lock file and let the lock go (nothing when this process does not hold it)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)  # closing the file lets its flock go
        self._fd = None


def _try_lock(fd: int) -> bool:
    """An exclusive lock on the open file ``fd`` without waiting: True when taken."""
    try:
        import fcntl
    except ImportError:  # Windows: a byte-range lock, also released by the system when its process ends
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@dataclass
class Stage:
    """A stage folder (named for the stage and a hash of its inputs); ``done`` once its ``done.json`` exists."""

    directory: Path
    started: float = field(default_factory=time.monotonic)
    lock: StageLock = field(init=False)

    def __post_init__(self):
        self.lock = StageLock(self.directory)

    @property
    def done(self) -> bool:
        return (self.directory / DONE).is_file()

    @property
    def seconds(self) -> float | None:
        """The wall time the stage took when it ran (also when this run found it finished), its earlier pieces' up to
        the checkpoint it resumed from included."""
        return self.marker().get("seconds")

    def share_left(self) -> float:
        """The share of a training stage's steps after its newest checkpoint (1 without one): the part of its work a
        resume still does."""
        trained = 0.0
        for path in self.directory.glob(f"{CHECKPOINT}*/{TRAINER_STATE}"):
            try:
                state = json.loads(path.read_text(encoding="utf-8"))
                trained = max(trained, min(1.0, state["global_step"] / state["max_steps"]))
            except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):  # one being written: the others
                continue
        return 1.0 - trained

    def marker(self) -> dict:
        """What ``done.json`` says, in one read; empty while the stage is not done. Its ``seconds`` (`seconds`),
        ``cpu``: the machine the stage finished on (`hardware.describe`: the CPU, its flags, the compute path), and
        ``threads`` and ``processes``: the torch threads it ran with and the processes that shared the run's models;
        each absent where it finished before stages recorded it."""
        return json.loads((self.directory / DONE).read_text(encoding="utf-8")) if self.done else {}

    def finish(self, summary: dict, earlier: float = 0.0, layout: dict | None = None) -> None:
        """Write the marker that the stage finished (whole), with its wall time and the machine it ran on, and let its
        lock go. ``earlier``: the seconds its earlier pieces took, when this one resumed from a checkpoint (they count
        in its time, and ``earlier_seconds`` says how many). ``layout``: its ``threads`` and ``processes``."""
        seconds = round(time.monotonic() - self.started + earlier, 1)
        summary = {
            **summary,
            "seconds": seconds,
            **({"earlier_seconds": round(earlier, 1)} if earlier else {}),
            "cpu": hardware.describe(),
            **(layout or {}),
        }
        write_atomic(self.directory / DONE, json.dumps(summary, indent=1, default=str) + "\n")  # the marker: whole
        self.lock.release()


def clock(seconds: float) -> str:
    """Seconds as ``H:MM:SS``."""
    return str(datetime.timedelta(seconds=round(seconds)))


@dataclass(frozen=True)
class Step:
    """A stage of a run's plan: its label (``train bert (seed 0)``), its folder, the kinds whose finished stages'
    times estimate its own, most alike first (``train bert``, then ``train``: the last is the kind of stage), and its
    work in units of its kinds' (an augmented training, twice the steps: 2)."""

    label: str
    directory: Path
    kinds: tuple[str, ...]
    work: float = 1.0
    variant: str | None = None  # a model's stage: its variant
    tests: tuple[str, ...] = ()  # an evaluation: the test configs it scores


def wall_seconds(step: Step, seconds: float, processes: int) -> float:
    """The run's wall time that a stage of ``seconds`` takes: a model's stage (a variant's) runs beside those of the
    other ``processes`` sharing the models, so it counts for its share; the rest (build, pretraining) runs alone."""
    return seconds / processes if step.variant else seconds


@dataclass
class Progress:
    """The study-level progress of a run: every stage it goes through (``plan``), in order. A stage whose
    ``done.json`` exists counts as done, whichever process or earlier run finished it; the time it recorded there
    joins the estimates. Each remaining stage is estimated by the mean time per unit of work of the finished stages
    of its first kind that has one, times its work; the ETA is their sum (a lower bound, ``≥``, while some remaining
    kind has no finished stage). With a ``forecast`` (the seconds `csc_hf.job_estimate.StepProbe` predicts for each
    stage, by its folder), a remaining stage takes its own forecast scaled by how the finished stages of its first
    kind that has some fared against theirs (measured / forecast seconds, summed): the probe's differences between
    variants stay (an evaluation of ``bart`` generates, one of ``bert`` does not) and the CPU's real pace replaces
    the probe's. A stage of a kind with no finished stage yet takes its forecast as it is: the line then says ``ETA
    ~``, a forecast until every remaining kind has a measured stage. With ``processes`` sharing the models' stages,
    those (the stages of a variant) count for 1/``processes`` of their time. Only the stages that finished on this
    ``machine`` (`hardware.describe`; or that did not record theirs) estimate the rest, and of a variant's stages
    only those that ran with ``threads`` torch threads beside as many ``processes`` (or did not record them): a run
    resumed on another CPU, or with its models' stages shared out otherwise, counts the stages the first one
    finished as done, not their pace. A training with a checkpoint (a stopped run's) counts for the share of its
    steps after it (`Stage.share_left`)."""

    plan: list[Step]
    started: float = field(default_factory=time.monotonic)
    forecast: dict[Path, float] = field(default_factory=dict)
    processes: int = 1
    machine: str = field(default_factory=hardware.describe)
    threads: int | None = None  # the torch threads of each process in the models' stages (None: any)

    def finished(self) -> dict[Path, float | None]:
        """The planned stages that have finished, with the seconds each recorded."""
        return {step.directory: Stage(step.directory).seconds for step in self.plan if Stage(step.directory).done}

    def measured(self) -> dict[Path, float]:
        """The planned stages that finished on this machine (or did not say where), a variant's with this run's
        threads and processes (or without a record of them), with the seconds each took. A stage that resumed from a
        checkpoint (``earlier_seconds``) counts each piece's start and the steps after its last checkpoint again: it
        counts only while no stage of its kind has finished in one piece."""
        markers = [(step, Stage(step.directory).marker()) for step in self.plan]
        here = [
            (step, marker)
            for step, marker in markers
            if marker.get("seconds") is not None
            and marker.get("cpu") in (None, self.machine)
            and (not step.variant or self._same_layout(marker))
        ]
        whole = {step.kinds[-1] for step, marker in here if not marker.get("earlier_seconds")}
        return {
            step.directory: marker["seconds"]
            for step, marker in here
            if not marker.get("earlier_seconds") or step.kinds[-1] not in whole
        }

    def _same_layout(self, marker: dict) -> bool:
        """Whether a variant's finished stage ran as this run runs them: its threads and processes (where recorded)."""
        threads, processes = marker.get("threads"), marker.get("processes")
        return (self.threads is None or threads in (None, self.threads)) and processes in (None, self.processes)

    def estimates(self) -> list[tuple[float | None, bool]]:
        """Each unfinished stage's estimated seconds (None: none) and whether it is a forecast."""
        return [(seconds, is_forecast) for _, seconds, is_forecast in self._estimates()]

    def _estimates(self) -> list[tuple[Step, float | None, bool]]:
        finished, here, times, paces = self.finished(), self.measured(), {}, {}
        for step in self.plan:
            if (seconds := here.get(step.directory)) is not None:
                for kind in step.kinds:
                    times.setdefault(kind, []).append(seconds / step.work)
                    if (forecast := self.forecast.get(step.directory)) is not None:
                        measured, forecasts = paces.get(kind, (0.0, 0.0))
                        paces[kind] = (measured + seconds, forecasts + forecast)
        estimates = []
        for step in self.plan:
            if step.directory in finished:
                continue
            left = Stage(step.directory).share_left()  # a training that resumes: the steps after its checkpoint
            forecast = self.forecast.get(step.directory)
            forecast = None if forecast is None else forecast * left
            if forecast is not None and (pace := next((paces[k] for k in step.kinds if k in paces), None)):
                estimates.append((step, forecast * pace[0] / pace[1] if pace[1] > 0 else forecast, False))
                continue
            measured = next((step.work * sum(times[k]) / len(times[k]) for k in step.kinds if k in times), None)
            if measured is None:
                estimates.append((step, forecast, forecast is not None))
            else:
                estimates.append((step, measured * left, False))
        return estimates

    def eta(self) -> tuple[float, bool] | None:
        """The estimated seconds of the unfinished stages (the models' shared by ``processes``) and whether every one
        of them has an estimate (``None`` while none has)."""
        estimates = self._estimates()
        known = [(step, seconds) for step, seconds, _ in estimates if seconds is not None]
        if not known:
            return None
        return sum(wall_seconds(step, s, self.processes) for step, s in known), len(known) == len(estimates)

    def line(self, directory: Path, label: str) -> str:
        """The progress line of the stage in ``directory`` as it starts: ``stage 5/30: evaluate bert (seed 0) ·
        elapsed 0:21:05 · ETA 3:02:10`` (``ETA ≥``: some stage has no estimate yet; ``ETA ~``: some are
        forecasts)."""
        eta = self.eta()
        forecast = any(is_forecast for _, is_forecast in self.estimates())
        ahead = "" if eta is None else f" · ETA {'' if eta[1] else '≥ '}{'~' if forecast else ''}{clock(eta[0])}"
        position = f"{len(self.finished()) + 1}/{len(self.plan)}"
        return f"stage {position}: {label} · elapsed {clock(time.monotonic() - self.started)}{ahead}"


def model_label(
    action: str, variant: str, seed: int | None, augmented: bool = False, training_set: str | None = None
) -> str:
    """How the progress names a model's stage: ``train bert (seed 0)``, ``evaluate bart (seed 1, augmented)``,
    ``train plome (seed 0, training set pe10)``; without a seed, the kind of stage of every seed (``evaluate bart
    (augmented)``)."""
    details = [
        *([f"seed {seed}"] if seed is not None else []),
        *(["augmented"] if augmented else []),
        *([f"training set {training_set}"] if training_set else []),
    ]
    return f"{action} {variant}" + (f" ({', '.join(details)})" if details else "")
