"""``python -m csc_hf.train CONFIG.yaml [key=value ...]`` (also under ``accelerate launch -m csc_hf.train``): the
shell of `csc_hf.training`. A failing run prints one line (``csc_hf.train: error: ...``) and exits with 2;
``CSC_HF_DEBUG=1`` adds the traceback."""

from __future__ import annotations

import os
import sys

from . import hardware
from .cli import run_guarded
from .logging import plain_library_output


def main(argv: list[str] | None = None) -> int:
    """Train from ``argv`` (default: the command line): a config path and ``key=value`` overrides."""
    hardware.configure_runtime()  # before torch loads (with csc_hf.training): the OpenMP setting
    from . import training

    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(training.__doc__)
        print(training.keys_help())
        return 0 if args else 2

    def run() -> None:
        arguments = training.load_config(args[0], args[1:])
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:  # one process: torch's threads, and advice on a busy machine
            hardware.set_threads()
        try:
            with plain_library_output():  # a long run: the Trainer's bar, not one per weights file
                training.train(*arguments)
        finally:
            _leave_process_group()

    return run_guarded("csc_hf.train", run)


def _leave_process_group() -> None:
    """Under a launcher (``accelerate launch``, torchrun): destroy the process group the training made, before the
    process exits, as torch asks, rather than leave its connections to the interpreter's teardown."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
