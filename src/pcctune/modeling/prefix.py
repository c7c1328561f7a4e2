"""Continuous prompts on a frozen encoder (DCPCSE, Jiang et al. 2022, §2.1–2.2).

- **Deep prompts** (DCPCSE): P trainable key/value vectors prepended in the attention of *every*
  layer (prefix tuning / P-tuning v2), through peft's ``PrefixTuning``; optionally produced by an
  MLP re-parameterisation (``projection``). The prefix lives in the attention cache, not in the
  sequence, so the outputs keep one position per real token and mean, cls and last-token pooling
  work unchanged. BERT numbers positions after the cache (positions P..P+L−1); DCPCSE's code
  inherited that offset. ``offset_positions=False`` passes positions 0..L−1 instead. Backbones whose
  attention reads no cache get the prefix another way (MPNet: ``pcctune.modeling.prefix_mpnet``; it
  numbers positions from the input ids whatever the prefix, so ``offset_positions`` does not apply) or a
  one-line error.
- **Shallow prompts** (SCPCSE, the ablation): P trainable input embeddings inserted after the
  first token, initialised from the embeddings of a manual template; their output positions are
  removed again before pooling.

The backbone is frozen; only the prompts train. They are saved in ``prompts.safetensors`` beside
the (unchanged) backbone weights and restored on load, so a saved model keeps its prompts.
"""

from __future__ import annotations

import inspect
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Literal

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from typing_extensions import override

from pcctune.errors import PcctuneError
from pcctune.modeling.template import TemplateTransformer

PROMPTS_FILE = "prompts.safetensors"
"""The file of a saved model's continuous prompts, beside its backbone weights."""


class ShallowPrompt(nn.Module):
    """P trainable input embeddings, inserted after the first token of every sequence."""

    def __init__(self, embeddings: torch.Tensor) -> None:
        super().__init__()
        self.prompt = nn.Parameter(embeddings.detach().clone())

    @property
    def length(self) -> int:
        """P, the number of prompt embeddings."""
        return self.prompt.shape[0]

    def insert(self, inputs_embeds: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``inputs_embeds`` and ``attention_mask`` with the P prompt embeddings (and P ones) after each sequence's
        first token."""
        batch = inputs_embeds.shape[0]
        prompt = self.prompt.to(inputs_embeds.dtype).unsqueeze(0).expand(batch, -1, -1)
        embeds = torch.cat([inputs_embeds[:, :1], prompt, inputs_embeds[:, 1:]], dim=1)
        mask = torch.cat(
            [attention_mask[:, :1], attention_mask.new_ones(batch, self.length), attention_mask[:, 1:]], dim=1
        )
        return embeds, mask


class PromptedTransformer(TemplateTransformer):
    """A frozen backbone with deep (per-layer prefix) or shallow (input) continuous prompts.

    Args:
        prompt_kind: ``deep`` or ``shallow``.
        prompt_length: P, the number of virtual tokens.
        prompt_projection: deep only, produce the prefixes with an MLP (P-tuning v2's re-parameterisation).
        offset_positions: deep only, keep BERT's positions after the prefix (DCPCSE's behaviour).
        prompt_init_text: shallow only, the manual template whose token embeddings initialise the prompt.
        **kwargs: everything ``TemplateTransformer`` accepts.
    """

    config_keys: list[str] = [
        *TemplateTransformer.config_keys,
        "prompt_kind",
        "prompt_length",
        "prompt_projection",
        "offset_positions",
        "prompt_init_text",
    ]

    def __init__(
        self,
        model_name_or_path: str,
        *,
        prompt_kind: Literal["deep", "shallow"] = "deep",
        prompt_length: int = 16,
        prompt_projection: bool = False,
        offset_positions: bool = True,
        prompt_init_text: str = "This sentence means",
        **kwargs: Any,
    ) -> None:
        super().__init__(model_name_or_path, **kwargs)
        if prompt_kind not in ("deep", "shallow") or prompt_length < 1:
            raise PcctuneError(f"prompts need kind deep|shallow and a length ≥ 1 (got {prompt_kind}, {prompt_length})")
        self.prompt_kind = prompt_kind
        self.prompt_length = prompt_length
        self.prompt_projection = prompt_projection
        self.offset_positions = offset_positions
        self.prompt_init_text = prompt_init_text
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)
        self.prefixed_layers: list[Any] = []
        if prompt_kind == "deep":
            from peft import PrefixTuningConfig, TaskType, get_peft_model

            config = PrefixTuningConfig(
                task_type=TaskType.FEATURE_EXTRACTION,
                num_virtual_tokens=prompt_length,
                prefix_projection=prompt_projection,
                encoder_hidden_size=self.model.config.hidden_size,
            )
            self.prefixed_layers = self._prefix_route()
            self.model: Any = get_peft_model(self.model, config)
            self.shallow: ShallowPrompt | None = None
        else:
            self.shallow = ShallowPrompt(self._init_embeddings(prompt_init_text, prompt_length))
        # Shallow prompts lengthen the sequence, and offset deep prompts number it from P: either way the
        # input may use at most max_position_embeddings − P tokens.
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit is not None and (prompt_kind == "shallow" or (offset_positions and not self.prefixed_layers)):
            room = limit - prompt_length
            if self.max_seq_length is None or self.max_seq_length > room:
                self.max_seq_length = room
        saved = Path(model_name_or_path) / PROMPTS_FILE
        if saved.is_file():
            self.prompt_parameters_load(load_file(str(saved)))

    @property
    def native(self) -> bool:
        """Continuous prompts are never expressible in plain sentence-transformers."""
        return False

    def _prefix_route(self) -> list[Any]:
        """How the prefix reaches each layer: peft's cache (``[]``), or MPNet's prefixed attentions."""
        if "past_key_values" in inspect.signature(type(self.model).forward).parameters:
            return []
        model_type = getattr(self.model.config, "model_type", type(self.model).__name__)
        if model_type == "mpnet":
            from pcctune.modeling.prefix_mpnet import accept_prefixes

            return accept_prefixes(self.model)
        raise PcctuneError(
            f"deep prompts need an attention that reads a prefix cache, as BERT's, RoBERTa's or (through "
            f"pcctune) MPNet's; {model_type}'s does not: use shallow prompts or LoRA"
        )

    def _init_embeddings(self, text: str, length: int) -> torch.Tensor:
        ids = self._ids(text) or [int(self.text_tokenizer.unk_token_id or 0)]
        ids = (ids * (length // len(ids) + 1))[:length]
        embeddings: Any = self.model.get_input_embeddings()
        return embeddings.weight[ids]

    def _shallow_prompt(self) -> ShallowPrompt:
        if self.shallow is None:
            raise PcctuneError("deep prompts have no input prompt")
        return self.shallow

    # --- the prompts' own weights -----------------------------------------------------------

    def prompt_state_dict(self) -> dict[str, torch.Tensor]:
        """The prompts' own weights, the file ``save`` writes beside the backbone: the deep prompts' peft state, or
        the shallow prompt's embeddings."""
        if self.prompt_kind == "deep":
            from peft import get_peft_model_state_dict

            return {k: v.contiguous() for k, v in get_peft_model_state_dict(self.model).items()}
        return {"prompt": self._shallow_prompt().prompt.detach().contiguous()}

    def prompt_parameters_load(self, state: dict[str, torch.Tensor]) -> None:
        """Load weights ``prompt_state_dict`` gave into this model's prompts."""
        if self.prompt_kind == "deep":
            from peft import set_peft_model_state_dict

            set_peft_model_state_dict(self.model, state)
        else:
            self._shallow_prompt().prompt.data.copy_(state["prompt"])

    def save(self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any) -> None:
        """The unchanged backbone, tokenizer and config as usual, plus the prompts in their own file."""
        backbone = self.model.get_base_model() if self.prompt_kind == "deep" else self.model
        backbone.save_pretrained(output_path, safe_serialization=safe_serialization)
        self.processor.save_pretrained(output_path)
        self.save_config(output_path)
        save_file(self.prompt_state_dict(), str(Path(output_path) / PROMPTS_FILE))

    # --- forward ----------------------------------------------------------------------------

    @override
    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask = features["attention_mask"]
        if self.prompt_kind == "deep":
            # What peft's forward does, minus its dropping of position_ids: prefix cache + widened mask.
            batch = mask.shape[0]
            prefix_mask = mask.new_ones(batch, self.prompt_length)
            inputs: dict[str, Any] = {key: features[key] for key in ("input_ids", "token_type_ids") if key in features}
            if not self.offset_positions and not self.prefixed_layers:
                inputs["position_ids"] = (mask.long().cumsum(-1) - 1).clamp(min=0)
            prefix = self.model.get_prompt(batch_size=batch)
            if self.prefixed_layers:
                from pcctune.modeling.prefix_mpnet import prefixes_set

                route: Any = prefixes_set(self.prefixed_layers, prefix)
            else:
                route, inputs["past_key_values"] = nullcontext(), prefix
            with route:
                output = self.model.get_base_model()(
                    **inputs, attention_mask=torch.cat([prefix_mask, mask], dim=1), return_dict=True
                )
            features["token_embeddings"] = output.last_hidden_state
            return features
        backbone: Any = self.model
        shallow = self._shallow_prompt()
        embeds, widened = shallow.insert(backbone.get_input_embeddings()(features["input_ids"]), mask)
        output = backbone(inputs_embeds=embeds, attention_mask=widened, return_dict=True).last_hidden_state
        features["token_embeddings"] = torch.cat([output[:, :1], output[:, 1 + shallow.length :]], dim=1)
        return features
