"""The CPU a run computes on: its instruction sets, those the environment lets torch's kernels use, the compute path
they give, and how many cores are free.

    hardware.describe()        # "Intel(R) Xeon(R) ... (family 6, model 143), 2 usable CPUs; flags: avx2 avx512f ...;
                               #  compute path: bf16 (AMX)"
    hardware.cpu_has_bf16()    # whether bf16 autocast computes in bf16 here (torch's probe, less the held kernels)
    hardware.torch_threads()   # torch threads for a run here: OMP_NUM_THREADS, else every usable CPU (never the load)

A process that asks for more threads than the cores left to it waits on its slowest thread at every parallel region
(OpenMP barriers): beside one busy process a 2-thread step on 2 cores slows far more than a 1-thread step does
(BENCHMARKS.md, "Contention"). Functions over /proc and the environment, with fallbacks where /proc is missing (not
Linux); only `cpu_has_bf16` and `set_threads` load torch.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

RUNTIME_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE"}
"""Settings of torch's runtimes for csc_hf's commands. ``OMP_WAIT_POLICY``: idle threads of torch's OpenMP pool sleep
instead of spinning, so a parallel region that waits for a thread the OS has put aside frees its core for the
process that took the other (BENCHMARKS.md, "Contention"); read by libgomp once, when torch loads. oneDNN's primitive
cache keeps its default size: a larger one holds a kernel and its buffers for every batch shape a process meets, and
the side encoders' batches (one row per distinct character or syllable) change size from step to step (the glyph
CNN's are padded to a few sizes; BENCHMARKS.md, "oneDNN's primitive cache")."""

FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "avx_vnni")
"""The CPU flags that decide torch's CPU kernels: AVX2/FMA (fp32), AVX-512, and bf16 in hardware (AVX512-BF16, AMX)."""

BF16_FLAGS = frozenset({"avx512_bf16", "amx_tile", "amx_bf16"})
"""The flags of bf16 in hardware (torch's probe reads AVX512-BF16 and the AMX tiles): with any of them bf16 autocast
computes in bf16, elsewhere torch emulates it."""

HOLD_TO_AVX2 = {"MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
"""The variables that hold MKL's, oneDNN's and ATen's kernels to AVX2 when set before torch loads: the compute path of
a CPU without AVX-512 or bf16 (a Zen 3), emulated on one that has them (``bench/bench_limit.py --isa avx2``; under them
`csc-bench run` takes that CPU's fp32 path and default preset too, `kernel_flags`)."""

AMX_PATH = "bf16 (AMX)"
"""The compute path of bf16 on AMX tiles (`compute_path`): the one the ``cpu`` preset is the default on
(`csc_hf.resources.default_preset`)."""

AVX2_PATH = "fp32 (AVX2)"
"""The compute path of fp32 on AVX2 without AVX-512 (`compute_path`): the slowest the default presets are sized for,
where ``cpu-tiny`` is the default (`csc_hf.resources.default_preset`)."""

_ONEDNN_BELOW_AVX512 = frozenset({"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2"})
_ONEDNN_WITHOUT_BF16 = _ONEDNN_BELOW_AVX512 | {"AVX512_CORE", "AVX512_CORE_VNNI"}
_MKL_BELOW_AVX512 = frozenset({"SSE4_2", "AVX", "AVX2"})


def cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str, set[str]]:
    """The CPU's model name, with its family and model numbers where /proc/cpuinfo gives them (one name can cover
    generations: an "AMD EPYC" Zen 1 is family 23 model 1, a Zen 3 family 25 model 1), and its flags ("" and an empty
    set where /proc/cpuinfo is missing)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "", set()
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
        if not line.strip() and fields:  # the first processor's block is enough
            break
    name, family, model = fields.get("model name", ""), fields.get("cpu family"), fields.get("model")
    if name and family and model:
        name += f" (family {family}, model {model})"
    return name, set(fields.get("flags", "").split())


def kernel_flags(flags: set[str], environ=os.environ) -> set[str]:
    """The ``flags`` that torch's kernels may use here: the environment can hold them below the CPU (`HOLD_TO_AVX2`).
    bf16 needs oneDNN's matrix products at AVX512_CORE_BF16 or above and ATen's kernels at AVX-512
    (``ONEDNN_MAX_CPU_ISA``, ``ATEN_CPU_CAPABILITY``); fp32 on AVX-512 needs ATen's and MKL's
    (``MKL_ENABLE_INSTRUCTIONS``). A variable left unset holds nothing."""
    aten = environ.get("ATEN_CPU_CAPABILITY", "avx512").lower()
    onednn = environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    mkl = environ.get("MKL_ENABLE_INSTRUCTIONS", "AVX512").upper()
    kept = set(flags)
    if aten != "avx512" or onednn in _ONEDNN_WITHOUT_BF16:
        kept -= BF16_FLAGS
    if aten != "avx512" or onednn in _ONEDNN_BELOW_AVX512 or mkl in _MKL_BELOW_AVX512:
        kept = {flag for flag in kept if not flag.startswith("avx512") or flag in BF16_FLAGS}
    return kept


def bf16_held(environ=os.environ) -> bool:
    """Whether the environment keeps torch's kernels from bf16 in hardware (`kernel_flags`) on any CPU."""
    return not kernel_flags(set(BF16_FLAGS), environ)


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware (AVX512-BF16 or AMX), as torch's own probe of the instruction sets
    (cpuinfo, on every OS) reads it, and the environment lets torch's kernels use it (`kernel_flags`):
    there bf16 autocast is faster than fp32; elsewhere torch emulates bf16, slower than fp32. A torch without the
    probe says no."""
    import torch

    probes = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(probe() for probe in probes if probe is not None) and not bf16_held()


def compute_path(flags: set[str] | None = None) -> str:
    """``bf16 (AMX)``, ``bf16 (AVX512-BF16)``, ``fp32 (AVX-512)``, ``fp32 (AVX2)`` or ``fp32``: what the cpu
    preset's ``precision: auto`` computes in on this CPU and which units do its matrix products. ``flags`` default to
    the CPU's, less those the environment holds torch's kernels from (`kernel_flags`); without flags (no
    /proc/cpuinfo), torch's own probe decides bf16 (`cpu_has_bf16`)."""
    if flags is None:
        flags = kernel_flags(cpuinfo()[1])
    if not flags:
        return "bf16" if cpu_has_bf16() else "fp32"
    if "amx_bf16" in flags:
        return AMX_PATH
    if "avx512_bf16" in flags:
        return "bf16 (AVX512-BF16)"
    if "avx512f" in flags:
        return "fp32 (AVX-512)"
    return AVX2_PATH if "avx2" in flags else "fp32"


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. under taskset or a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_ticks(path: str = "/proc/stat") -> tuple[int, int] | None:
    """(busy, total) ticks of all CPUs since boot; steal (a VM's CPU taken by the host) counts as busy."""
    try:
        fields = Path(path).read_text(encoding="utf-8").splitlines()[0].split()
    except (OSError, IndexError):
        return None
    ticks = [int(x) for x in fields[1:]]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return sum(ticks[:8]) - idle, sum(ticks[:8])


def others_busy(start: tuple[int, int], end: tuple[int, int], own_seconds: float, hz: int, cpus: int) -> float:
    """CPUs that other processes kept busy between two `/proc/stat` readings ((busy, total) ticks of all CPUs),
    given this process's CPU seconds between them."""
    seconds = (end[1] - start[1]) / hz  # CPU-seconds that passed on all CPUs
    if seconds <= 0:
        return 0.0
    others = (end[0] - start[0]) / hz - own_seconds
    return max(0.0, min(cpus, others / seconds * cpus))


def busy_cpus(interval: float = 1.0) -> float:
    """CPUs kept busy by *other* processes over the next ``interval`` seconds (this process's own CPU time taken
    out); where /proc/stat is missing, the 1-minute load average less one (this process)."""
    start, own = _cpu_ticks(), time.process_time()
    if start is None:
        try:
            return max(0.0, os.getloadavg()[0] - 1.0)
        except OSError:
            return 0.0
    time.sleep(interval)
    end = _cpu_ticks()
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return others_busy(start, end, time.process_time() - own, hz, os.cpu_count() or 1)


def threads_for(usable: int, busy: float) -> int:
    """Torch threads beside ``busy`` CPUs of other work on ``usable`` CPUs: the whole cores left (a core more than
    half busy counts as taken), at least one."""
    return max(1, min(usable, usable - int(busy + 0.5)))


def torch_threads() -> int:
    """Threads a run gives torch: ``OMP_NUM_THREADS`` when set (the user chose), else every usable CPU. The count never
    follows the load (a run's bytes depend on its threads: same seed, same bytes)."""
    chosen = os.environ.get("OMP_NUM_THREADS", "")
    return int(chosen) if chosen.isdigit() and int(chosen) > 0 else usable_cpus()


def thread_choice(interval: float = 1.0) -> tuple[int, str]:
    """`torch_threads`, and why (for the log); without ``OMP_NUM_THREADS``, the other processes' load measured over
    ``interval`` seconds and, when they keep CPUs busy, the ``OMP_NUM_THREADS`` (`threads_for`) that leaves them
    theirs."""
    threads = torch_threads()
    if os.environ.get("OMP_NUM_THREADS") == str(threads):  # the user chose: nothing to measure
        return threads, f"OMP_NUM_THREADS={threads}"
    usable, busy = usable_cpus(), busy_cpus(interval)
    advice = threads_for(usable, busy)
    if advice == usable:
        return threads, f"other processes keep {busy:.1f} of {usable} usable CPUs busy; OMP_NUM_THREADS decides"
    return threads, (
        f"other processes keep {busy:.1f} of {usable} usable CPUs busy: OMP_NUM_THREADS={advice} (and nice) would run "
        "beside them several times faster; the count stays fixed so that the bytes do not depend on the load"
    )


def set_threads(interval: float = 1.0) -> int:
    """Log the CPU (`describe`) and give torch the threads of `thread_choice`, saying why (with the advice for a
    busy machine); returns torch's threads before. For a run's shell (``csc-bench run``, ``csc-bench train``,
    ``python -m csc_hf.train`` as one process): the count holds for the whole run."""
    import torch

    from .logging import get_logger

    before = torch.get_num_threads()
    threads, why = thread_choice(interval)
    torch.set_num_threads(threads)
    logger = get_logger(__name__)
    logger.info("CPU: %s", describe())
    logger.info("torch threads: %d (%s)", threads, why)
    return before


def configure_runtime(environ=os.environ) -> dict[str, str]:
    """Set `RUNTIME_DEFAULTS` in ``environ`` where the user set nothing; returns what it set. It takes effect in this
    process only if torch (and its OpenMP runtime) has not loaded yet, and in every process started after it."""
    chosen = {name: value for name, value in RUNTIME_DEFAULTS.items() if name not in environ}
    environ.update(chosen)
    return chosen


def describe() -> str:
    """One line for a log or a benchmark: the CPU's model, its CPUs, the flags of `FLAGS` it has, its path."""
    name, flags = cpuinfo()
    have = [flag for flag in FLAGS if flag in flags]
    usable = kernel_flags(flags)
    held = [flag for flag in have if flag not in usable]
    return (
        f"{name or 'CPU'}, {usable_cpus()} usable CPUs; flags: {' '.join(have) or 'unknown'}; "
        + (f"kernels held from {' '.join(held)} by the environment; " if held else "")
        + f"compute path: {compute_path(usable or None)}"
    )


__all__ = [
    "BF16_FLAGS",
    "FLAGS",
    "HOLD_TO_AVX2",
    "RUNTIME_DEFAULTS",
    "bf16_held",
    "busy_cpus",
    "compute_path",
    "configure_runtime",
    "cpu_has_bf16",
    "cpuinfo",
    "describe",
    "kernel_flags",
    "others_busy",
    "thread_choice",
    "threads_for",
    "torch_threads",
    "usable_cpus",
    "set_threads",
]
