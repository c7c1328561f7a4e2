"""Tiny random models built from configs in code, and a miniature SentEval folder.

What the test suite and every benchmark's ``--quick`` run on: no file is downloaded. A word-level
tokenizer is built with ``tokenizers`` from a small vocabulary, a 2-layer BERT and a 2-layer Llama are
initialised at random and saved to a folder, so every loading path of pcctune runs offline in seconds;
the SentEval folder has every file the seven STS tasks, the dev sets, the stage-2 set and SNLI read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from transformers import LlamaTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

WORDS = (
    'this sentence : " means in one word something can be summarized as a an the man woman dog cat '
    "plays guitar piano runs park is are eating food in on with two people children kids boy girl "
    "young old red blue car street , . ! ? playing riding horse bike sitting bench outside water"
).split()


def word_level_tokenizer(kind: str) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over ``WORDS``: BERT-style (``[CLS] … [SEP]``) or decoder-style (BOS, no pad)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<s>", "</s>"]
    vocab = {token: index for index, token in enumerate(specials + sorted(set(WORDS)))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if kind == "bert":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
        )
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            unk_token="[UNK]",
            pad_token="[PAD]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
            model_max_length=64,
        )
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", vocab["<s>"])])
    # No pad token on purpose: decoders often lack one and pcctune must set it.
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", bos_token="<s>", eos_token="</s>", model_max_length=64
    )


TINY_SIZES: dict[str, Any] = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
}
"""The dimensions every tiny test model shares (a few thousand parameters)."""


def save_tiny_model(folder: Path, kind: str) -> Path:
    """A 2-layer random BERT (``kind='bert'``), MPNet (``'mpnet'``, BERT's tokenizer) or Llama (anything else)
    with its tokenizer, saved to ``folder``."""
    from transformers import BertConfig, BertModel, MPNetConfig, MPNetModel

    tokenizer = word_level_tokenizer("bert" if kind == "mpnet" else kind)
    if kind not in ("bert", "mpnet"):
        return save_tiny_llama(folder, tokenizer)
    with torch.random.fork_rng(devices=[]):  # the same weights every time; the caller's stream stays as it was
        torch.manual_seed(0)
        if kind == "bert":
            BertModel(BertConfig(vocab_size=len(tokenizer), **TINY_SIZES)).save_pretrained(folder)
        else:  # MPNet numbers positions from pad_token_id + 1, as RoBERTa: two more rows in the position table
            sizes = {**TINY_SIZES, "max_position_embeddings": TINY_SIZES["max_position_embeddings"] + 2}
            config = MPNetConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **sizes)
            MPNetModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def metaspace_tokenizer() -> LlamaTokenizer:
    """A Llama-2-style tokenizer trained here: BPE over SentencePiece's word-start ``▁`` (Metaspace,
    ``prepend_scheme="first"``, byte fallback), wrapped in transformers' own ``LlamaTokenizer``, BOS added."""
    import json

    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaTokenizer

    corpus = [*SENTENCES, " ".join(WORDS), 'This sentence : "a man plays guitar" means in one word:"']
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"]))
    spec = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in spec["merges"]]
    return LlamaTokenizer(vocab=spec["vocab"], merges=merges, add_bos_token=True, model_max_length=64)


def save_tiny_llama(folder: Path, tokenizer: PreTrainedTokenizerBase, dtype: torch.dtype = torch.float32) -> Path:
    """A 2-layer random Llama for ``tokenizer``, saved in ``dtype`` (bf16: as Mistral and Llama-2 on the Hub)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        num_key_value_heads=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **TINY_SIZES,
    )
    with torch.random.fork_rng(devices=[]):  # the same weights every time; the caller's stream stays as it was
        torch.manual_seed(0)
        model: Any = LlamaForCausalLM(config)
    model.to(dtype).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_lines(path: Path, lines: list[str]) -> None:
    """A UTF-8 text file of ``lines``, its folders made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


SENTENCES = [
    "A man plays guitar.",
    "A woman plays piano.",
    "A dog runs in the park.",
    "Two kids are eating food.",
    "A boy is riding a bike.",
    "A girl is sitting on a bench outside.",
    "The old man is playing piano.",
    "A red car is in the street.",
    "A cat is eating.",
    "Children play with water.",
    "A young woman is riding a horse.",
    "People are sitting outside.",
]


def _write_sts(root: Path) -> None:
    """STS12–16 (two subsets each) and STS-B, with the quirks of the real files."""
    sts = root / "downstream" / "STS"
    s = SENTENCES
    for year in range(12, 17):
        folder = sts / f"STS{year}-en-test"
        # Two subsets; the second has an empty gold line and an extra source field (as STS16 does).
        write_lines(folder / "STS.input.alpha.txt", [f"{s[i]}\t{s[i + 1]}" for i in range(4)])
        write_lines(folder / "STS.gs.alpha.txt", ["4.0", "3.2", "1.0", "0.4"])
        write_lines(folder / "STS.input.beta.txt", [f"{s[i]}\t{s[i + 2]}\tsource-a\tsource-b" for i in range(4, 8)])
        write_lines(folder / "STS.gs.beta.txt", ["2.5", "", "4.8", "0.2"])
    stsb = sts / "STSBenchmark"
    row = "main-captions\tMSRvid\t2012test\t{id:04d}\t{score}\t{a}\t{b}"
    write_lines(
        stsb / "sts-train.csv",
        [
            row.format(id=1, score="3.0", a=s[1], b=s[0]),  # test pair in reversed order: leaks
            row.format(id=2, score="2.0", a='He said "hello', b="A cat is eating."),  # unbalanced quote
            row.format(id=3, score="5.0", a=s[8], b=s[9]) + "\textra-source\tmore",  # extra fields
        ],
    )
    write_lines(
        stsb / "sts-dev.csv",
        [
            row.format(id=4, score="1.0", a=s[0], b=s[1]),  # an STS12 test pair: filtered out
            row.format(id=30, score="2.0", a=s[8], b=s[10]),
            row.format(id=31, score="4.0", a=s[9], b=s[11]),
            row.format(id=32, score="3.0", a=s[11], b=s[8]),  # three kept: a correlation needs three
        ],
    )
    write_lines(stsb / "sts-test.csv", [row.format(id=5 + i, score=f"{i}.5", a=s[i], b=s[i + 3]) for i in range(5)])


def make_mini_senteval(root: Path) -> Path:
    """Write the miniature SentEval folder under ``root``."""
    s = SENTENCES
    _write_sts(root)
    sick = root / "downstream" / "SICK"
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"
    write_lines(
        sick / "SICK_train.txt", [header, f"1\t{s[10]}\t{s[11]}\t3.0\tNEUTRAL", f"2\t{s[2]}\t{s[4]}\t1.0\tNEUTRAL"]
    )
    write_lines(
        sick / "SICK_trial.txt",
        [header] + [f"{3 + i}\t{s[i]}\t{s[11 - i]}\t{1 + (i * 7) % 5}\tNEUTRAL" for i in range(6)],
    )
    write_lines(
        sick / "SICK_test_annotated.txt",
        [header]
        + [f"{10 + i}\t{s[i]}\t{s[i + 5]}\t{1 + i * 0.5}\tNEUTRAL" for i in range(6)]
        + [f"20\t{s[2]}\t{s[4]}\t4.5\tNEUTRAL"],
    )
    snli = root / "downstream" / "SNLI"
    for split in ("dev", "test"):  # each premise with an entailment and a contradiction: 6 triplets a split
        premises = [s[i] for i in range(6) for _ in range(2)]
        write_lines(snli / f"s1.{split}", premises)
        write_lines(snli / f"s2.{split}", [s[(i + 1 + k) % 12] for i in range(6) for k in range(2)])
        write_lines(snli / f"labels.{split}", ["entailment", "contradiction"] * 6)
    return root


def write_tokenized_copy(root: Path) -> Path:
    """A senteval-tokenized/ beside the mini senteval/: its STS text lowercased (as SentEval's script leaves it)."""
    tokenized = root.parent / "senteval-tokenized"
    for path in (root / "downstream" / "STS").rglob("*"):
        if path.is_file():
            target = tokenized / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = path.read_text(encoding="utf-8")
            target.write_text(text.lower() if "input" in path.name or path.suffix == ".csv" else text, encoding="utf-8")
    return tokenized


def write_mini_transfer(root: Path) -> Path:
    """Add the seven transfer tasks' files (tiny, clearly learnable) to the mini SentEval folder ``root``."""
    down = root / "downstream"
    good = [f"a good red car number {i} ." for i in range(20)]
    bad = [f"the old dog is eating food {i} ." for i in range(20)]
    for task, (pos, neg) in {
        "MR": ("rt-polarity.pos", "rt-polarity.neg"),
        "CR": ("custrev.pos", "custrev.neg"),
        "SUBJ": ("subj.objective", "subj.subjective"),
        "MPQA": ("mpqa.pos", "mpqa.neg"),
    }.items():
        write_lines(down / task / pos, good)
        write_lines(down / task / neg, bad)
    for split in ("train", "dev", "test"):
        write_lines(
            down / "SST" / "binary" / f"sentiment-{split}", [f"{s} \t1" for s in good] + [f"{s} \t0" for s in bad]
        )
    write_lines(down / "TREC" / "train_5500.label", [f"DESC:manner {s}" for s in good] + [f"HUM:ind {s}" for s in bad])
    write_lines(down / "TREC" / "TREC_10.label", [f"DESC:def {s}" for s in good[:5]] + [f"HUM:gr {s}" for s in bad[:5]])
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    rows = [f"1\t{i}\t{i}\t{g}\t{g}" for i, g in enumerate(good)] + [
        f"0\t{i}\t{i}\t{g}\t{b}" for i, (g, b) in enumerate(zip(good, bad, strict=False))
    ]
    write_lines(down / "MRPC" / "msr_paraphrase_train.txt", [header] + rows)
    write_lines(down / "MRPC" / "msr_paraphrase_test.txt", [header] + rows[::2])
    return root


@dataclass(frozen=True)
class TinyWorkspace:
    """A tiny BERT, a tiny Llama and a miniature SentEval folder side by side."""

    bert: Path
    llama: Path
    senteval: Path


def tiny_workspace(root: Path) -> TinyWorkspace:
    """Build a ``TinyWorkspace`` under ``root`` (a few seconds, offline)."""
    senteval = make_mini_senteval(root / "senteval")
    write_tokenized_copy(senteval)
    return TinyWorkspace(
        bert=save_tiny_model(root / "tiny-bert", "bert"),
        llama=save_tiny_model(root / "tiny-llama", "llama"),
        senteval=senteval,
    )
