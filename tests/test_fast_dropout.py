"""`FastDropout` (the training key ``fast_dropout``) drops at its rate with the same scaling as `nn.Dropout`, from
splitmix64 words keyed by torch's generator, the same mask for the same seed whatever the thread count, and changes
nothing a model saves or predicts; under eager attention it drops the attention probabilities too; the training keys
``fast_dropout`` and ``attn_implementation`` reach the model and leave no trace in the saved folder."""

import json

import pytest
import torch
from conftest import BART_TINY, torch_threads, train_tiny
from torch import nn

from csc_hf.modeling import VARIANTS, CSCConfig, CSCForCorrection, CSCTokenizer, FastDropout, use_fast_dropout
from csc_hf.modeling.bart import build_bart
from csc_hf.modeling.kernels import (
    EAGER_FAST_DROPOUT,
    eager_attention_fast_dropout,
    random_bits,
    use_training_kernels,
)
from csc_hf.training import check_config

M64 = (1 << 64) - 1


def splitmix64(key: int, i: int) -> int:
    """The i-th output of splitmix64 from state ``key``, in Python's unbounded integers (the published algorithm)."""
    z = (key + i * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


@pytest.mark.parametrize("n", [1, 7, 4096 * 3 + 2, 300_001])
def test_random_bits_are_the_quarters_of_splitmix64_words_keyed_by_torchs_generator(n):
    torch.manual_seed(11)
    key = int(torch.empty((), dtype=torch.int64).random_(-(1 << 63), None)) & M64
    torch.manual_seed(11)
    bits = random_bits(n).tolist()
    assert len(bits) == n
    for j in {0, 1, 2, 3, n // 3, n // 2, n - 1} & set(range(n)):  # element j: bits 16 (j % 4) up of word j // 4
        word = splitmix64(key, j // 4 + 1)
        assert bits[j] & 0xFFFF == (word >> (16 * (j % 4))) & 0xFFFF, j
    assert bits != random_bits(n).tolist() or n == 1  # the next mask takes the next key


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


TOKENIZER = CSCTokenizer.from_texts(["我们今天去银行取钱", "他们明天来学校上课"])
BUILDERS = {  # tiny models whose attention goes through transformers' attention kernels
    "bert": lambda: CSCForCorrection(
        CSCConfig(
            vocab_size=len(TOKENIZER), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
        )
    ),
    "bart": lambda: build_bart(TOKENIZER, **BART_TINY),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_eager_fast_dropout_attention_is_eager_attention_in_eval(name):
    build = BUILDERS[name]
    ids = torch.tensor([TOKENIZER("我们今天去银行")["input_ids"], TOKENIZER("他们明天来学校")["input_ids"]])
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0
    batch = {"input_ids": ids, "attention_mask": mask, "labels": ids}
    torch.manual_seed(0)
    eager = build().eval()
    eager.set_attn_implementation("eager")
    fast = build()
    fast.load_state_dict(eager.state_dict())
    use_training_kernels(fast, "eager", fast_dropout=True).eval()
    assert fast.config._attn_implementation == EAGER_FAST_DROPOUT
    assert torch.equal(fast(**batch).logits, eager(**batch).logits)  # eval: the same bytes as transformers' eager
    assert use_training_kernels(build(), "eager").config._attn_implementation == "eager"  # without fast_dropout
    assert use_training_kernels(build(), "sdpa", fast_dropout=True).config._attn_implementation == "sdpa"


def test_eager_fast_dropout_attention_drops_probabilities_in_training():
    module = nn.Module()  # the attention layer: only its training flag is read
    qkv = torch.randn(3, 8, 2, 40, 16, requires_grad=True)
    q, k, v = qkv.unbind(0)
    plain = eager_attention_fast_dropout(module.eval(), q, k, v, None, dropout=0.1)[1]
    torch.manual_seed(1)
    out, weights = eager_attention_fast_dropout(module.train(), q, k, v, None, dropout=0.1)
    kept = weights != 0
    assert abs(1 - kept.double().mean().item() - 0.1) < 0.01  # 25,600 probabilities, each dropped with p = 0.1
    assert torch.allclose(weights, torch.where(kept, plain / 0.9, 0.0))  # the kept ones scaled by 1 / (1 - p)
    assert torch.allclose(out, (weights @ v).transpose(1, 2))
    out.sum().backward()
    assert qkv.grad.flatten(1).abs().sum(1).min() > 0  # through the queries, keys and values
