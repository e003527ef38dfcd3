"""``python -m csc_hf.train CONFIG.yaml [key=value ...]`` (also under ``accelerate launch -m csc_hf.train``)."""

import sys

from .training import main

if __name__ == "__main__":
    sys.exit(main())
