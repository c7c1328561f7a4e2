"""Build a SentenceTransformer from a Hub id, a local folder, a GGUF file or a packaged short name.

The result is always a plain ``SentenceTransformer``: an input module followed by sentence-transformers'
``Pooling`` (and, for a saved model rebuilt with another template or pooling, the modules it saved after its pooling
and its saved prompts: ``pcctune.modeling.saved_parts``). The input module is sentence-transformers' own
``Transformer`` wherever it behaves as pcctune's: with or without a template (a chat template,
``pcctune.modeling.chat_template``; a decoder pads right, so its default position ids count from a row's first
token), so ``model.save`` and a trainer's checkpoints write a folder plain sentence-transformers loads. A 4-bit
backbone or continuous prompts need pcctune's ``TemplateTransformer`` (or its ``PromptedTransformer``), whose saved
folder needs pcctune to load (``pcctune.modeling.template``). A sentence-transformers folder loaded with no overrides
is returned exactly as saved.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from transformers import AutoConfig, PretrainedConfig
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_MASKED_LM_MAPPING_NAMES,
)

from pcctune.errors import PcctuneError, first_line, unknown
from pcctune.modeling import chat_template
from pcctune.modeling.dtypes import torch_dtype
from pcctune.modeling.gguf import gguf_to_folder
from pcctune.modeling.quantization import bitsandbytes_config, linear_4bit_layers
from pcctune.modeling.registry import PACKAGED_MODELS, locate_packaged, packaged_key
from pcctune.modeling.saved_parts import keep_saved_parts, saved_pooling_mode
from pcctune.modeling.saving import (
    MODULES_FILE,
    is_native_type,
    is_pcctune_type,
    is_saved_model,
    module_types,
    saved_file,
)
from pcctune.modeling.template import (
    Template,
    TemplateTransformer,
    check_budget,
    ensure_pad_token,
    loading_quantization,
    template_tokens,
    text_tokenizer,
)

PoolingName = Literal["mean", "cls", "lasttoken"]


@dataclass(frozen=True)
class ModelSource:
    """Where a model's weights come from, resolved to something ``from_pretrained`` can read."""

    spec: str
    origin: Literal["packaged", "gguf", "local", "hub"]
    path: str


def resolve_source(spec: str) -> ModelSource:
    """Resolve a user's model argument without loading weights."""
    key = packaged_key(spec)
    if key is not None:
        located = locate_packaged(key)
        if located.suffix == ".gguf":
            return ModelSource(spec, "packaged", str(gguf_to_folder(located)))
        return ModelSource(spec, "packaged", str(located))
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        return ModelSource(spec, "gguf", str(gguf_to_folder(path)))
    if path.is_dir():
        if not (path / "config.json").is_file() and not is_saved_model(path):
            raise PcctuneError(f"{path} is a folder but holds no model (no config.json or {MODULES_FILE})")
        return ModelSource(spec, "local", str(path.resolve()))
    if path.exists():
        raise PcctuneError(f"unknown model {spec!r}: not a model folder, GGUF file or packaged name")
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise PcctuneError(f"no such folder: {spec} ({path.absolute()}){models_near(path)}")
    return ModelSource(spec, "hub", spec)


def check_loadable_offline(source: ModelSource) -> None:
    """Refuse, before anything is read or written, a Hub id that cannot load: the Hub is offline (``HF_HUB_OFFLINE``)
    and the cache the load reads holds no copy of it (neither its ``modules.json``, a sentence-transformers model's,
    whose backbone may lie in a module folder, nor its ``config.json``)."""
    from huggingface_hub import is_offline_mode

    if source.origin != "hub" or not is_offline_mode():
        return
    if all(saved_file(source.path, name, cached_only=True) is None for name in (MODULES_FILE, "config.json")):
        raise PcctuneError(
            f"model {source.spec!r}: not a packaged name or a folder, and as a Hub id not in the cache while the Hub "
            "is offline (HF_HUB_OFFLINE): it cannot load"
        )


def models_near(path: Path) -> str:
    """What a mistyped model path's nearest existing folder holds, where it looks like a run folder (saved models
    one folder down, as a run's ``stage1-pcc/final``): ``; runs/my_run holds stage1-pcc/final``; else nothing."""
    folder = next((parent for parent in path.parents if parent.is_dir()), None)
    if folder is None or folder.resolve() in (Path.cwd().resolve(), Path(folder.anchor)):
        return ""
    models = sorted(p.relative_to(folder).as_posix() for p in folder.glob("*/*") if is_saved_model(p))
    return f"; {folder} holds {', '.join(models)}" if models else ""


def saved_template(source: ModelSource) -> str | None:
    """The template a local model folder applies, read from its tokenizer alone (no weights loaded)."""
    if source.origin not in ("local", "gguf", "packaged"):
        raise PcctuneError(f"{source.spec}: its template is known only once it is loaded")
    from transformers import AutoTokenizer

    try:
        return chat_template.template_in(AutoTokenizer.from_pretrained(source.path))
    except (OSError, ValueError):  # no tokenizer here: the model's load will say what is wrong
        return None


def is_decoder_only(config: PretrainedConfig) -> bool:
    """True for causal LMs without a masked-LM head (Llama, Qwen, Gemma…), false for BERT-likes."""
    model_type = getattr(config, "model_type", "")
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def _is_pcctune_model(folder: Path) -> bool:
    """True when a saved model uses pcctune's modules and otherwise only sentence-transformers' own.

    Only then is ``trust_remote_code`` passed: the code it trusts is this installed package.
    """
    if not is_saved_model(folder):
        return False
    types = module_types(folder)
    ours = [is_pcctune_type(t) for t in types]
    return any(ours) and all(o or is_native_type(t) for o, t in zip(ours, types, strict=True))


def check_build_arguments(spec: str, pooling: str | None, max_seq_length: int | None) -> None:
    """``build_model``'s arguments that are refused before anything loads, each in one line."""
    if not spec.strip():
        raise PcctuneError("no model named: give a packaged name, a folder, a .gguf file or a Hub id")
    if max_seq_length is not None and max_seq_length < 1:
        raise PcctuneError(f"max_seq_length is a number of tokens, at least 1; got {max_seq_length}")
    if pooling is not None and pooling not in get_args(PoolingName):
        raise PcctuneError(unknown("pooling", pooling, get_args(PoolingName)))


def build_model(
    spec: str | Path,
    template: str | None = None,
    pooling: PoolingName | None = None,
    max_seq_length: int | None = None,
    dtype: str = "fp32",
    device: str | None = None,
    model_kwargs: dict[str, Any] | None = None,
    prompt: dict[str, Any] | None = None,
    quantization: dict[str, Any] | None = None,
    full_precision_base: bool = False,
) -> SentenceTransformer:
    """Load or assemble a SentenceTransformer.

    Args:
        spec: packaged short name (``all-MiniLM-L6-v2``, ``smollm2-135m``, ``gemma-3-270m``), a ``.gguf`` file, a
            local folder (Hugging Face or sentence-transformers), or a Hub id.
        template: preset (``eol``, ``sth``, ``sum``) or a string with one ``{text}`` slot.
        pooling: ``mean``, ``cls`` or ``lasttoken``; default: the saved one, else ``lasttoken`` for decoders and
            ``mean`` for encoders. A saved model rebuilt with another template or pooling keeps the modules it saved
            after its pooling and its prompts (``pcctune.modeling.saved_parts``).
        max_seq_length: token budget; with a template only the sentence is cut.
        dtype: ``fp32``, ``bf16`` or ``fp16`` weights, asked of ``from_pretrained`` (a bf16 checkpoint loads in
            fp32 when fp32 is asked; ``pcctune.modeling.dtypes``); for a 4-bit backbone, the dtype of its
            non-quantized weights (norms, embeddings), as the authors' ``torch_dtype``.
        model_kwargs: passed to ``from_pretrained`` of the backbone (e.g. a 4-bit quantization config).
        prompt: continuous prompts on a frozen backbone (``PromptedTransformer``), e.g. ``{"prompt_length": 16}``.
        quantization: load the backbone in 4-bit with these settings (QLoRA; saved with the model); a saved
            model loads in 4-bit with them whatever it was saved as.
        full_precision_base: load a saved 4-bit (QLoRA) model's base unquantized, in ``dtype``, with its
            adapter on top: how the authors evaluate (``--load_kbit 16`` in their ``evaluation.py``).

    Examples:
        >>> import pathlib, tempfile, pcctune.testing
        >>> with tempfile.TemporaryDirectory() as root:  # a tiny random Llama, saved offline; PromptEOL's template
        ...     model = build_model(pcctune.testing.save_tiny_model(pathlib.Path(root), "llama"), template="eol")
        >>> model[1].pooling_mode, model.encode(["A man is playing a guitar."]).shape
        ('lasttoken', (1, 32))
    """
    check_build_arguments(spec := str(spec), pooling, max_seq_length)
    template_text = Template.parse(template).text if template is not None else None
    weights, source = torch_dtype(dtype), resolve_source(spec)
    try:
        load_as = {} if full_precision_base else quantization
        model = _load(source, template_text, pooling, device, model_kwargs or {}, prompt, load_as, weights)
    except PcctuneError:
        raise
    except Exception as error:  # a damaged or foreign file, an unreachable Hub: one line for the user
        raise load_error(spec, source, error) from None
    return fitted(model, max_seq_length, weights)


def fitted(model: SentenceTransformer, max_seq_length: int | None, weights: torch.dtype) -> SentenceTransformer:
    """``model`` just loaded, given its token budget (checked to leave room for the sentence in its template) and
    its weights in ``weights``, those of our own modules (continuous prompts) too; a 4-bit model keeps its layout."""
    if max_seq_length is not None:
        check_budget(template_tokens(model[0]), max_seq_length)
        model.max_seq_length = max_seq_length
    if not linear_4bit_layers(model):
        model.to(weights)
    return model


def _load(
    source: ModelSource,
    template: str | None,
    pooling: PoolingName | None,
    device: str | None,
    model_kwargs: dict[str, Any],
    prompt: dict[str, Any] | None,
    quantization: dict[str, Any] | None,
    weights: torch.dtype,
) -> SentenceTransformer:
    folder = Path(source.path)
    saved_as_is = is_saved_model(folder) or source.origin == "hub"
    kept_pooling = pooling is not None and pooling == saved_pooling_mode(source.path)  # nothing to assemble anew
    if saved_as_is and template is None and (pooling is None or kept_pooling) and not model_kwargs and not prompt:
        # pcctune's own TemplateTransformer is imported from this installed package; a saved module
        # restores its own settings (template, 4-bit quantization) from its config, unless asked otherwise
        # (quantization: {} for a full-precision base, settings for 4-bit).
        kwargs: dict[str, Any] = {"dtype": weights}
        if quantization:  # sentence-transformers' own Transformer (a plain save) takes it from model_kwargs
            kwargs["quantization_config"] = bitsandbytes_config(quantization)
        with loading_quantization(quantization or None) if quantization is not None else nullcontext():
            model = SentenceTransformer(
                source.path, device=device, trust_remote_code=_is_pcctune_model(folder), model_kwargs=kwargs
            )
        tokenizer = getattr(model[0], "tokenizer", None)
        if tokenizer is not None and chat_template.template_in(tokenizer) is not None:
            tokenizer.padding_side = "right"  # as chat_template.install sets it; older native saves did not keep it
        if isinstance(model[0], Transformer):
            ensure_pad_token(text_tokenizer(model[0]))  # a Hub decoder (Llama-2, Mistral) ships without one
        return model
    quantization = quantization or None
    model_kwargs = {"dtype": weights, **model_kwargs}
    pools = pooling or saved_pooling_mode(source.path)  # a saved model rebuilt keeps its pooling unless asked
    model = _assemble(source, template, pools, device, model_kwargs, prompt, quantization)
    return keep_saved_parts(model, source.path, trust_remote_code=_is_pcctune_model(folder))


def load_error(spec: str, source: ModelSource, error: Exception) -> PcctuneError:
    """The one-line error for a model that would not load, with a hint for an unreachable Hub."""
    detail = first_line(error)
    hint = ""
    if source.origin == "hub" and "connect" in str(error):
        hint = " (the Hub is unreachable: use a local folder, a .gguf file or a packaged name: "
        hint += f"{', '.join(PACKAGED_MODELS)}; HF_HUB_OFFLINE=1 fails fast)"
    elif source.origin != "hub":
        hint = f" (is {source.path} complete and not damaged?)"
    return PcctuneError(f"could not load model {spec!r}: {detail}{hint}")


def _assemble(
    source: ModelSource,
    template: str | None,
    pooling: str | None,
    device: str | None,
    model_kwargs: dict[str, Any],
    prompt: dict[str, Any] | None = None,
    quantization: dict[str, Any] | None = None,
) -> SentenceTransformer:
    config = AutoConfig.from_pretrained(source.path)
    decoder = is_decoder_only(config)
    kwargs: dict[str, Any] = {
        "template": template,
        "position_ids_from_mask": decoder,
        "model_kwargs": model_kwargs,
        "quantization": quantization,
    }
    module: Transformer
    if prompt:
        from pcctune.modeling.prefix import PromptedTransformer

        module = PromptedTransformer(source.path, **prompt, **kwargs)
    elif quantization:
        module = TemplateTransformer(source.path, **kwargs)
    else:  # sentence-transformers' own module, its template a chat template: `model.save` writes it as such
        module = Transformer(source.path, model_kwargs=model_kwargs)
        if decoder:  # a row's positions count from its first token, as with pcctune's module; saved with it
            text_tokenizer(module).padding_side = text_tokenizer(module).init_kwargs["padding_side"] = "right"
    ensure_pad_token(text_tokenizer(module))
    if template is not None and not isinstance(module, TemplateTransformer):
        chat_template.install(module, template)
    pool = Pooling(module.get_embedding_dimension(), pooling or ("lasttoken" if decoder else "mean"))
    return SentenceTransformer(modules=[module, pool], device=device)
