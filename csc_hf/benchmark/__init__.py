"""The controlled CSC benchmark: the config table, the shared plan, the `datasets` builder and the Hub export."""

from .builder import CSCBench, CSCBenchConfig, columns, load_dataset
from .configs import CONFIGS, TEST_CONFIGS
from .plan import BenchParams, plan_for

__all__ = [
    "CONFIGS",
    "TEST_CONFIGS",
    "BenchParams",
    "CSCBench",
    "CSCBenchConfig",
    "columns",
    "load_dataset",
    "plan_for",
]
