"""csc_hf.hardware: the CPU's flags and compute path, and the torch threads a run takes beside other work."""

import os
import subprocess
import sys
import time

import pytest

from csc_hf import hardware, resources

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx fma avx2 bmi2

processor\t: 1
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx fma avx2 bmi2
"""


def test_reads_the_first_processors_name_and_flags(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert hardware.cpuinfo(str(path)) == ("AMD EPYC 7B13", {"fpu", "sse2", "avx", "fma", "avx2", "bmi2"})
    assert hardware.cpuinfo(str(tmp_path / "missing")) == ("", set())
    path.write_text(CPUINFO.replace("model name", "cpu family\t: 25\nmodel\t\t: 1\nmodel name", 1))
    assert hardware.cpuinfo(str(path))[0] == "AMD EPYC 7B13 (family 25, model 1)"  # a Zen 3, not a Zen 1 (23, 1)


@pytest.mark.parametrize("flags, path", [
    ({"avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"}, "bf16 (AMX)"),  # Sapphire Rapids
    ({"avx2", "avx512f", "avx512_bf16"}, "bf16 (AVX512-BF16)"),  # Cooper Lake, Zen 4
    ({"avx2", "avx512f"}, "fp32 (AVX-512)"),
    ({"avx2", "fma"}, "fp32 (AVX2)"),  # Zen 3
    ({"sse2"}, "fp32"),
])  # fmt: skip
def test_compute_path(flags, path):
    assert hardware.compute_path(flags) == path


@pytest.mark.parametrize("usable, busy, threads", [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 1.0, 1), (2, 3.5, 1), (8, 2.2, 6), (1, 0.0, 1),
])  # fmt: skip
def test_threads_for_the_cores_left(usable, busy, threads):
    assert hardware.threads_for(usable, busy) == threads


def test_omp_num_threads_wins(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert hardware.torch_threads() == 3


def test_the_choice_says_why(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert hardware.thread_choice(interval=0.01) == (3, "OMP_NUM_THREADS=3")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(hardware, "usable_cpus", lambda: 2)
    monkeypatch.setattr(hardware, "busy_cpus", lambda interval: 1.0)
    threads, why = hardware.thread_choice()  # the load never changes the count (same seed, same bytes): it advises
    assert threads == 2 and why.startswith("other processes keep 1.0 of 2 usable CPUs busy: OMP_NUM_THREADS=1 (and")
    monkeypatch.setattr(hardware, "busy_cpus", lambda interval: 0.1)
    assert hardware.thread_choice() == (2, "other processes keep 0.1 of 2 usable CPUs busy; OMP_NUM_THREADS decides")


def test_sees_a_busy_process():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert hardware.busy_cpus(1.0) >= 0.6  # the busy loop (other work on the machine only adds to it)
    finally:
        busy.kill()
        busy.wait()


def test_own_time_is_not_others():
    # 2 CPUs, 100 ticks/s, 1 s: 150 busy ticks of 200, of which this process ran 1.0 s: others kept 0.5 CPU busy
    assert hardware.others_busy((0, 0), (150, 200), 1.0, 100, 2) == pytest.approx(0.5)
    assert hardware.others_busy((0, 0), (100, 200), 1.0, 100, 2) == 0.0
    assert hardware.others_busy((5, 9), (5, 9), 0.0, 100, 2) == 0.0  # no time passed


def test_describe_names_the_path():
    assert "compute path: " in hardware.describe()


SAPPHIRE_RAPIDS = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "avx_vnni"}


@pytest.mark.parametrize("environ, path", [
    ({}, "bf16 (AMX)"),
    (hardware.HOLD_TO_AVX2, "fp32 (AVX2)"),  # bench_limit.py --isa avx2: a Zen 3's path
    ({"ATEN_CPU_CAPABILITY": "avx2"}, "fp32 (AVX2)"),
    ({"ATEN_CPU_CAPABILITY": "AVX512"}, "bf16 (AMX)"),
    ({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"}, "fp32 (AVX-512)"),  # oneDNN without bf16: autocast would emulate it
    ({"ONEDNN_MAX_CPU_ISA": "avx512_core_amx"}, "bf16 (AMX)"),
    ({"MKL_ENABLE_INSTRUCTIONS": "AVX2"}, "bf16 (AMX)"),  # MKL does fp32 only: the bf16 products are oneDNN's
])  # fmt: skip
def test_the_environment_holds_the_kernels_below_the_cpu(environ, path):
    assert hardware.compute_path(hardware.kernel_flags(SAPPHIRE_RAPIDS, environ)) == path
    assert hardware.bf16_held(environ) == (not path.startswith("bf16"))


def test_an_fp32_cpu_stays_fp32_under_any_environment():
    zen3 = {"avx2", "fma"}
    assert hardware.kernel_flags(zen3, {}) == zen3 == hardware.kernel_flags(zen3, hardware.HOLD_TO_AVX2)


def test_held_kernels_take_the_fp32_path_and_preset(monkeypatch):
    monkeypatch.setattr(hardware, "cpuinfo", lambda: ("Xeon", SAPPHIRE_RAPIDS))
    for name, value in hardware.HOLD_TO_AVX2.items():
        monkeypatch.setenv(name, value)
    line = hardware.describe()
    assert "kernels held from avx512f avx512_bf16 avx512_fp16 amx_tile amx_bf16" in line
    assert line.endswith("compute path: fp32 (AVX2)")
    assert not hardware.cpu_has_bf16()
    assert resources.default_preset() == "cpu-tiny"  # as on a Zen 3


def test_bf16_without_amx_takes_the_small_preset(monkeypatch):
    """A Zen 4 computes in bf16 (AVX512-BF16) but without AMX's tiles: the cpu grid takes too long there."""
    monkeypatch.setattr(hardware, "cpuinfo", lambda: ("AMD EPYC", {"avx2", "fma", "avx512f", "avx512_bf16"}))
    for name in hardware.HOLD_TO_AVX2:
        monkeypatch.delenv(name, raising=False)
    assert hardware.describe().endswith("compute path: bf16 (AVX512-BF16)")
    assert resources.default_preset() == "cpu-small"
    monkeypatch.setattr(hardware, "cpuinfo", lambda: ("Xeon", SAPPHIRE_RAPIDS))
    assert resources.default_preset() == "cpu"


def test_runtime_defaults_leave_the_users_choice():
    environ = {"OMP_WAIT_POLICY": "ACTIVE"}
    assert hardware.configure_runtime(environ) == {} and environ == {"OMP_WAIT_POLICY": "ACTIVE"}
    environ = {}
    chosen = hardware.configure_runtime(environ)
    assert chosen == {"OMP_WAIT_POLICY": "PASSIVE"} == environ  # oneDNN's primitive cache keeps its default size


def test_runtime_defaults_reach_torchs_openmp_runtime():
    code = "from csc_hf import hardware; hardware.configure_runtime(); import torch; torch.ones(9, 9).sum()"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["OMP_DISPLAY_ENV"] = "TRUE"  # libgomp prints the settings it read
    err = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stderr
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in err
