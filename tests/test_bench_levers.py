"""The speed levers bench/bench_limit.py measures must compute what they replace: a lever that changed the recipe
(dropout at half its rate, say) would be timed against a model it does not equal."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
bench_limit = pytest.importorskip("bench_limit")


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_fast_dropout_drops_at_its_rate(p):
    torch.manual_seed(0)
    dropout = bench_limit.FastDropout(p).train()
    y = dropout(torch.ones(400, 1001))  # an odd number of elements: the last 32-bit draw is half used
    dropped = (y == 0).double().mean().item()
    assert abs(dropped - p) < 0.005  # 400,400 draws: the standard error is under 0.001
    for half in (y.flatten()[0::2], y.flatten()[1::2]):  # each 16-bit half of a draw drops at the rate too
        assert abs((half == 0).double().mean().item() - p) < 0.01
    assert torch.allclose(y[y != 0], torch.tensor(1 / (1 - p)))
    assert torch.equal(dropout.eval()(torch.ones(3)), torch.ones(3))
