"""In-context demonstrations for prompt-based embeddings (PromptEOL §3.2, Figure 2, Table 4).

One solved example placed before the input steers the last token of a causal LM towards a
meaning-bearing word, e.g.:

    This sentence : "A jockey riding a horse." means in one word:"Equestrian".This sentence : …

(one line: the solved example runs on into the template, ``…"Disaster".This sentence : …``, as in
kongds/scaling_sentemb's ``icl_examples.txt``).

A demonstration is part of the template, so the chosen one is saved with the model like any
template. Candidates are built here, not downloaded: sentences from the filtered STS-B training
pairs (never a sentence that appears in a test set), each labelled with the word the model itself
predicts under the base template. ``search_demonstrations`` scores every candidate on a dev
set that shares no pair with a test set, and reports them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sentence_transformers import SentenceTransformer

from pcctune.errors import PcctuneError
from pcctune.modeling.template import SLOT, Template, input_module, text_tokenizer


@dataclass(frozen=True)
class Demonstration:
    """An in-context demonstration (PromptEOL §3.2): a sentence and the one word that sums it up."""

    sentence: str
    word: str


def demonstration_template(base: str, demonstration: Demonstration) -> str:
    """``base`` preceded by ``base`` filled with the demonstration and answered with its word."""
    template = Template.parse(base)
    for text in (demonstration.sentence, demonstration.word):
        if SLOT in text:
            raise PcctuneError(f"a demonstration may not contain {SLOT}: {text!r}")
    quoted = template.suffix.endswith('"')  # EOL opens a quote for the word; STH/SUM end with a plain word
    answer = demonstration.word + '"' if quoted else " " + demonstration.word
    solved = template.fill(demonstration.sentence) + answer + "."  # run on, as scaling_sentemb's icl_examples.txt
    return solved + template.text


def predict_words(model: SentenceTransformer, sentences: list[str], base: str, max_new_tokens: int = 4) -> list[str]:
    """The word a causal LM writes after ``base`` for each sentence (greedy decoding, first word kept)."""
    from transformers import AutoModelForCausalLM

    backbone = input_module(model)
    lm: Any = AutoModelForCausalLM.from_pretrained(backbone.model.config._name_or_path)
    tokenizer = text_tokenizer(backbone)
    template = Template.parse(base)
    words = []
    for sentence in sentences:
        inputs = tokenizer(template.fill(sentence), return_tensors="pt")
        output = lm.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
        )
        text = str(tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True))
        match = re.match(r"\s*([\w'-]+)", text)
        words.append(match.group(1) if match else "")
    return words
