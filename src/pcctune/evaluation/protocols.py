"""Named STS evaluation protocols: which text form is read and how each sentence is prepared.

Both protocols score cosine similarity with Spearman × 100 as SentEval does (STS12–16 on the
concatenation of their subsets, STS-B and SICK-R on the test split, avg = plain mean of 7), and
both see a sentence as SentEval does: split on whitespace, joined by single spaces.

- ``simcse-senteval``: the text of the data folder given (``--data``), nothing else changed.
- ``paper``: what the Pcc-tuning and PromptEOL evaluations did (their ``evaluation.py`` batcher,
  in the public ZBWpro/Pcc-tuning and kongds/scaling_sentemb repositories). The STS12–16 and STS-B
  text is the Moses-tokenized, lowercased form that SentEval's download script leaves (SICK stays
  raw: that script does not tokenize it), and when a prompt template wraps the sentence, each
  sentence is first edited, in this order:

  1. a ``.`` is appended unless it ends in ``.``, ``?``, ``"`` or ``'``;
  2. every ``"`` becomes ``'``, so the sentence cannot close the template's quote;
  3. a final ``?`` becomes ``.``.

  Without a template (an encoder such as MiniLM) the batcher edits nothing, so only the text
  form differs. The batcher never truncates STS inputs, and neither does pcctune's evaluation
  unless ``--max-seq-length`` is given.
- ``paper-prompt``: ``paper`` for prompt-based embeddings (the papers' ``--mask_embedding_sentence``
  runs), which refuses a model without a template instead of scoring it unedited.

Whether a model is templated is read from its template wherever it lives (pcctune's input module or
the chat template of a model saved as plain sentence-transformers: ``model_template``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pcctune.data.senteval import tokenized_dir
from pcctune.data.sts import STSTask
from pcctune.data.tasks import load_test_tasks
from pcctune.errors import PcctuneError, unknown


def senteval_text(sentence: str) -> str:
    """SentEval's view of a sentence: split on whitespace, joined by single spaces."""
    return " ".join(sentence.split())


def paper_sentence(sentence: str) -> str:
    """The papers' edits of a sentence before it fills a template (rules 1–3 above)."""
    if sentence and sentence[-1] not in ".?\"'":
        sentence += "."
    sentence = sentence.replace('"', "'")
    if sentence.endswith("?"):
        sentence = sentence[:-1] + "."
    return sentence


@dataclass(frozen=True)
class Protocol:
    """A named evaluation protocol: the form of the test text it scores (as given, or SentEval's tokenized text) and
    whether it edits a templated sentence as the papers' code does; ``summary`` says it in words."""

    name: str
    text_form: Literal["given", "tokenized"]
    edits_templated_sentences: bool
    summary: str
    requires_template: bool = False

    def check_model(self, template: str | None, model: str = "this model") -> None:
        """Refuse a protocol that edits templated sentences for a model with no template."""
        if self.requires_template and template is None:
            raise PcctuneError(
                f"protocol {self.name!r} scores prompt-based embeddings and {model} has no template: "
                "give it one (--template eol) or use --protocol paper"
            )

    def prepare(self, sentence: str, templated: bool) -> str:
        """The text the model encodes for ``sentence`` under this protocol."""
        text = senteval_text(sentence)
        return paper_sentence(text) if templated and self.edits_templated_sentences else text


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol("simcse-senteval", "given", False, "SentEval text as given, whitespace-normalised"),
        Protocol("paper", "tokenized", True, "tokenized STS text; the papers' sentence edits under a template"),
        Protocol("paper-prompt", "tokenized", True, "paper, for a model with a template only", requires_template=True),
    )
}
DEFAULT_PROTOCOL = "simcse-senteval"


def get_protocol(name: str) -> Protocol:
    """The protocol named ``name``; an unknown name is refused in one line naming the known ones."""
    if name not in PROTOCOLS:
        raise PcctuneError(unknown("protocol", name, list(PROTOCOLS)))
    return PROTOCOLS[name]


def protocol_data_dir(senteval_dir: Path, protocol: str) -> Path:
    """The SentEval folder whose STS text ``protocol`` reads (the tokenized copy for ``paper``)."""
    return tokenized_dir(senteval_dir) if get_protocol(protocol).text_form == "tokenized" else senteval_dir


def load_protocol_tasks(senteval_dir: Path, protocol: str) -> list[STSTask]:
    """The seven STS test tasks in the text form of ``protocol``."""
    return load_test_tasks(protocol_data_dir(senteval_dir, protocol))
