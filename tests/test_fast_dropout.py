"""`FastDropout` (the training key ``fast_dropout``) drops at its rate with the same scaling as `nn.Dropout`, the
same mask for the same seed whatever the thread count, and changes nothing a model saves or predicts; the training
keys ``fast_dropout`` and ``attn_implementation`` reach the model and leave no trace in the saved folder."""

import json

import pytest
import torch
from conftest import torch_threads, train_tiny
from torch import nn

from csc_hf.modeling import VARIANTS, CSCConfig, CSCForCorrection, FastDropout, use_fast_dropout
from csc_hf.training import check_config


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_fast_dropout_drops_at_its_rate(p):
    torch.manual_seed(0)
    dropout = FastDropout(p).train()
    y = dropout(torch.ones(400, 1001))  # an odd number of elements: the last 32-bit draw is half used
    dropped = (y == 0).double().mean().item()
    assert abs(dropped - p) < 0.005  # 400,400 draws: the standard error is under 0.001
    for half in (y.flatten()[0::2], y.flatten()[1::2]):  # each 16-bit half of a draw drops at the rate too
        assert abs((half == 0).double().mean().item() - p) < 0.01
    assert torch.allclose(y[y != 0], torch.tensor(1 / (1 - p)))
    assert torch.equal(dropout.eval()(torch.ones(3)), torch.ones(3))


def test_gradient_is_the_kept_mask_scaled_and_p_is_checked():
    torch.manual_seed(0)
    x = torch.randn(64, 33, requires_grad=True)
    y = FastDropout(0.2).train()(x)
    y.sum().backward()
    assert torch.equal(x.grad, (y != 0).float() * (1 / 0.8))
    assert torch.equal(FastDropout(0.0).train()(x), x)
    with pytest.raises(ValueError, match="p=1.0"):
        FastDropout(1.0)


def test_same_seed_same_mask_with_any_thread_count():
    masks = []
    for threads in (1, 2):
        with torch_threads(threads):
            torch.manual_seed(3)
            masks.append(FastDropout(0.1).train()(torch.ones(256, 4096, dtype=torch.bfloat16)))
    assert torch.equal(*masks)


def test_use_fast_dropout_replaces_every_dropout_module_and_changes_no_weight():
    torch.manual_seed(0)
    sizes = dict(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    model = CSCForCorrection(CSCConfig(**sizes, **VARIANTS["all_gate"]))
    rates = sorted(m.p for m in model.modules() if type(m) is nn.Dropout)
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    ids = torch.randint(5, 40, (3, 9))
    expected = model.eval()(input_ids=ids).logits
    use_fast_dropout(model)
    assert rates and not any(type(m) is nn.Dropout for m in model.modules())
    assert sorted(m.p for m in model.modules() if isinstance(m, FastDropout)) == rates
    assert model.state_dict().keys() == before.keys()
    assert torch.equal(model(input_ids=ids).logits, expected)  # eval mode: the identity
    assert not model.training and not any(m.training for m in model.modules())


def test_training_keys_reach_the_model_and_stay_out_of_the_saved_folder(tmp_path, small_params):
    with pytest.raises(ValueError, match="attn_implementation='flash'"):
        check_config({"output_dir": str(tmp_path / "x"), "attn_implementation": "flash"})
    keys = {"task": "mlm", "max_steps": 3, "save_strategy": "no"}
    plain = train_tiny(small_params, tmp_path / "plain", **keys)
    fast = [
        train_tiny(small_params, tmp_path / n, attn_implementation="eager", fast_dropout=True, **keys) for n in "ab"
    ]
    weights = [folder / "model.safetensors" for folder in (plain, *fast)]
    assert weights[1].read_bytes() == weights[2].read_bytes()  # same seed, same bytes
    assert weights[0].read_bytes() != weights[1].read_bytes()  # other dropout draws: the keys were used
    saved = json.loads((fast[0] / "config.json").read_text(encoding="utf-8"))
    assert not {"attn_implementation", "_attn_implementation", "fast_dropout"} & saved.keys()
