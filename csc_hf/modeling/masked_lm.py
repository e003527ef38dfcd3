"""Masked-LM pretraining of the semantic encoder, with the output layer computed only where it is scored.

A masked-LM step scores ~15% of the positions, yet `BertForMaskedLM` projects every position onto the whole
vocabulary (hidden x vocab_size, with its log-softmax: about a quarter of the `cpu` preset's pretraining FLOPs) and
throws 85% of it away. `SparseBertForMaskedLM` (ModernBERT's ``sparse_prediction``) gathers the labelled positions
first: in training, with labels, its ``logits`` are ``(labelled positions, vocab_size)`` in the batch's row-major
order and its loss is `BertForMaskedLM`'s (the mean cross-entropy over the labelled positions), or with the Trainer's
``num_items_in_batch`` (the labelled positions of every process and accumulation step) their sum over that count, so
that two processes or accumulated steps train as one larger batch. Without labels, or in eval mode (evaluation,
`compute_metrics`), it is `BertForMaskedLM` itself. Its weights and saved checkpoints are a plain `BertForMaskedLM`'s,
and so is the ``architectures`` entry of their config: `BertForMaskedLM.from_pretrained`, the Auto classes and any
tool that reads the config load them without this file.
"""

import os

import torch
from torch.nn import CrossEntropyLoss
from transformers import BertForMaskedLM
from transformers.modeling_outputs import MaskedLMOutput


class SparseBertForMaskedLM(BertForMaskedLM):
    """`BertForMaskedLM` whose training forward runs the masked-LM head only at the positions with a label."""

    def forward(self, input_ids=None, labels=None, num_items_in_batch=None, **inputs):
        """``inputs``: the further inputs of `BertForMaskedLM.forward` (``attention_mask``, ``token_type_ids``, ...)."""
        if labels is None or not self.training:
            return super().forward(input_ids, labels=labels, **inputs)
        inputs.pop("return_dict", None)
        outputs = self.bert(input_ids, return_dict=True, **inputs)
        flat = labels.flatten()
        positions = (flat != -100).nonzero().squeeze(1)  # index_select: its backward adds in order (deterministic)
        scores = self.cls(outputs.last_hidden_state.flatten(0, -2).index_select(0, positions))
        loss = CrossEntropyLoss(reduction="sum")(scores, flat.index_select(0, positions))
        count = len(positions) if num_items_in_batch is None else num_items_in_batch
        loss = loss / torch.as_tensor(count, device=loss.device).clamp(min=1)
        return MaskedLMOutput(
            loss=loss, logits=scores, hidden_states=outputs.hidden_states, attentions=outputs.attentions
        )

    def save_pretrained(self, save_directory, *args, **kwargs):
        """`BertForMaskedLM.save_pretrained`, its config naming `BertForMaskedLM` (what the weights are)."""
        super().save_pretrained(save_directory, *args, **kwargs)
        self.config.architectures = [BertForMaskedLM.__name__]
        if kwargs.get("is_main_process", True):
            self.config.to_json_file(os.path.join(save_directory, "config.json"))


__all__ = ["SparseBertForMaskedLM"]
