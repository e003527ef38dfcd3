"""csc_hf.job_estimate: the forecast of a study's stage times from a few steps timed here."""

import pytest

from csc_hf.job_estimate import StepProbe

TINY = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}  # a preset's `model`


def test_probe_times_every_stage_and_forecasts_the_plan():
    probe = StepProbe.measure(TINY, vocab_size=300, variants=["bert", "bart", "bert"], precision="fp32",
                              pretrain_batch=4, finetune_batch=4, eval_batch=4, steps=1, threads=1)
    assert probe.precision == "fp32" and probe.threads == 1
    assert probe.pretrain_step > 0 and probe.sentence > 0
    assert list(probe.finetune_step) == ["bert", "bart"] and probe.finetune_step["bart"] == probe.finetune_step["bert"]
    seconds = probe.stage_seconds(100, {"bert": 10, "bart": 20}, sentences=1000)
    assert seconds == {"pretrain": pytest.approx(100 * probe.pretrain_step),
                       "evaluate": pytest.approx(1000 * probe.sentence),
                       "train bert": pytest.approx(10 * probe.finetune_step["bert"]),
                       "train bart": pytest.approx(20 * probe.finetune_step["bart"])}
    assert "fp32 with 1 torch thread(s)" in probe.summary()
