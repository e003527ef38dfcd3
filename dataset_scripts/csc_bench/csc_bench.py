"""Loading-script wrapper of the csc_bench builder for datasets < 4 and for a Hub dataset repository.

datasets >= 4 runs no loading scripts: there use ``csc_hf.load_dataset("csc_bench", CONFIG, **params)`` or the
parquet export (``csc-bench export DIR``). Older datasets run this file with ``load_dataset("path/to/csc_bench",
CONFIG)``; it needs ``pip install csc_hf``, which generates the data locally from its embedded corpus.
"""

from csc_hf.benchmark.builder import CSCBench, CSCBenchConfig  # noqa: F401


class CscBench(CSCBench):
    """The csc_bench builder under the class name the script loader looks for."""
