"""Pretraining of the side encoders against a pretrained masked LM, before any variant is fine-tuned.

The side encoders of a variant (`SOURCES`: pinyin, strokes, glyphs) start from random weights at fine-tuning, where
they learn from the CSC pairs alone. `SidePretrainingModel` trains them first on plain text, each on its own: at a
masked position the frozen masked LM reads the context, the side encoder reads the masked character's own pinyin (or
strokes, or glyph), and the character is predicted from both,

    logits_k = mlm_head(h + project_k(encoder_k(side_k(y))))

(h: the frozen encoder's hidden state at the masked position, y: the masked character). The context already narrows
the candidates down; the side encoder learns what of its input tells the right one among them (which characters
sound alike, which look alike), in the space the masked-LM head reads. A variant then starts its side encoders from
these weights (`CSCModel.load_side_encoders`); its projections and fusion keep their own initialisation, so that it
still starts as its semantic encoder alone. The loss is the mean of the sources' cross-entropies: each encoder learns
as if trained alone.
"""

from collections.abc import Mapping

import torch
from torch import nn
from torch.nn import functional as F
from transformers import BertConfig, BertForMaskedLM
from transformers.modeling_outputs import MaskedLMOutput

from .configuration_csc import BERT_FIELDS, CSCConfig
from .modeling_csc import SOURCES, CharKnowledge, CSCPreTrainedModel, SideEncoder, with_knowledge_shapes


class SidePretrainingModel(CSCPreTrainedModel):
    """The side encoders of ``config.sources`` over a frozen `BertForMaskedLM` (see the module's docstring). Train it
    with masked-LM batches (``input_ids`` with ``[MASK]`` at the positions that have a label); the saved folder is
    what ``init_sides_from`` (`CSCModel.load_side_encoders`) reads."""

    def __init__(self, config: CSCConfig, knowledge: Mapping[str, torch.Tensor] | None = None):
        config = with_knowledge_shapes(config, knowledge)
        super().__init__(config)
        if not config.sources:
            raise ValueError("SidePretrainingModel needs at least one side source (config.sources)")
        self.knowledge = CharKnowledge(config, knowledge)
        bert_config = BertConfig(**{name: getattr(config, name) for name in BERT_FIELDS})
        self.mlm = BertForMaskedLM(bert_config)
        self.mlm.requires_grad_(False)
        self.sources = nn.ModuleDict({name: SideEncoder(SOURCES[name], config) for name in config.sources})
        self.post_init()

    @classmethod
    def from_mlm(cls, path: str, knowledge: Mapping[str, torch.Tensor] | None = None, **overrides):
        """Side encoders of ``overrides["sources"]`` over the masked-LM checkpoint at ``path`` (local or Hub)."""
        model = cls(CSCConfig.from_bert(path, **overrides), knowledge)
        model.mlm.load_state_dict(BertForMaskedLM.from_pretrained(path).state_dict())
        return model

    def train(self, mode: bool = True):
        """The frozen masked LM stays in eval mode (no dropout): it gives every step the same context."""
        super().train(mode)
        self.mlm.eval()
        return self

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        labels: torch.Tensor,
        num_items_in_batch: int | torch.Tensor | None = None,
        **kwargs,
    ) -> MaskedLMOutput:
        """Loss at the positions with a label (-100 elsewhere): the mean over the sources of each one's
        cross-entropy; ``logits`` are ``(sources, labelled positions, vocab_size)``."""
        flat = labels.flatten()
        positions = (flat != -100).nonzero().squeeze(1)
        targets = flat.index_select(0, positions)
        with torch.no_grad():
            hidden = self.mlm.bert(input_ids, attention_mask=attention_mask).last_hidden_state
            hidden = hidden.flatten(0, -2).index_select(0, positions)
        keys = {"char": targets}
        if any(side.key == "syllable" for side in self.sources.values()):
            keys["syllable"] = self.knowledge.char_syllable[targets]
        logits = torch.stack(
            [
                self.mlm.cls(hidden + side(keys[side.key], getattr(self.knowledge, side.table)))
                for side in self.sources.values()
            ]
        )
        loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.repeat(len(self.sources)), reduction="sum")
        count = num_items_in_batch if num_items_in_batch is not None else max(len(targets), 1)
        return MaskedLMOutput(loss=loss / (count * len(self.sources)), logits=logits)


__all__ = ["SidePretrainingModel"]
