"""Tiny random models built from configs in code, and a miniature SentEval folder.

No files are downloaded: a word-level tokenizer is built with ``tokenizers`` from a small
vocabulary, a 2-layer BERT and a 2-layer Llama are initialised at random and saved to a
temporary folder, so every loading path of pcctune is exercised offline in seconds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
if os.environ.get("PYTEST_XDIST_WORKER"):  # xdist runs one worker per core: one thread each
    torch.set_num_threads(1)

WORDS = (
    'this sentence : " means in one word something can be summarized as a an the man woman dog cat '
    "plays guitar piano runs park is are eating food in on with two people children kids boy girl "
    "young old red blue car street , . ! ? playing riding horse bike sitting bench outside water"
).split()


def _tokenizer(kind: str):
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


TINY_SIZES = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
}
"""The dimensions every tiny test model shares (a few thousand parameters)."""


def _save_tiny(folder: Path, kind: str) -> Path:
    from transformers import BertConfig, BertModel

    tokenizer = _tokenizer(kind)
    if kind != "bert":
        return save_tiny_llama(folder, tokenizer)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), **TINY_SIZES)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def metaspace_tokenizer():
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


def save_tiny_llama(folder: Path, tokenizer, dtype: torch.dtype = torch.float32) -> Path:
    """A 2-layer random Llama for ``tokenizer``, saved in ``dtype`` (bf16: as Mistral and Llama-2 on the Hub)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        num_key_value_heads=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **TINY_SIZES,
    )
    LlamaForCausalLM(config).to(dtype).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def metaspace_llama(tmp_path_factory) -> Path:
    """A tiny Llama whose tokenizer works like Llama-2's and Mistral's (SentencePiece/Metaspace)."""
    return save_tiny_llama(tmp_path_factory.mktemp("metaspace-llama"), metaspace_tokenizer())


@pytest.fixture(scope="session")
def bf16_llama(tmp_path_factory) -> Path:
    """A tiny Metaspace Llama whose weights are stored in bf16, as most decoder checkpoints on the Hub."""
    return save_tiny_llama(tmp_path_factory.mktemp("bf16-llama"), metaspace_tokenizer(), torch.bfloat16)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return _save_tiny(tmp_path_factory.mktemp("tiny-bert"), "bert")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    return _save_tiny(tmp_path_factory.mktemp("tiny-llama"), "llama")


def write_lines(path: Path, lines: list[str]) -> None:
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


@pytest.fixture()
def mini_senteval(tmp_path) -> Path:
    """A SentEval-shaped folder with every file the seven tasks and the stage-2 set read (the test's own copy)."""
    return make_mini_senteval(tmp_path / "senteval")


@pytest.fixture(scope="session")
def shared_senteval(tmp_path_factory) -> Path:
    """The same folder, made once for the session: for tests that only read it."""
    return make_mini_senteval(tmp_path_factory.mktemp("shared") / "senteval")


def make_mini_senteval(root: Path) -> Path:
    """Write the miniature SentEval folder under ``root``."""
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
        ],
    )
    write_lines(stsb / "sts-test.csv", [row.format(id=5 + i, score=f"{i}.5", a=s[i], b=s[i + 3]) for i in range(5)])
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


def encode_both_padding_sides(model, sentences):
    """Embeddings of ``sentences`` with right padding, then with left padding (side restored after)."""
    tokenizer = model[0].tokenizer
    side = tokenizer.padding_side
    try:
        tokenizer.padding_side = "right"
        right = model.encode(sentences, convert_to_tensor=True)
        tokenizer.padding_side = "left"
        left = model.encode(sentences, convert_to_tensor=True)
    finally:
        tokenizer.padding_side = side
    return right, left


@pytest.fixture()
def mini_transfer(mini_senteval) -> Path:
    """Adds the seven transfer tasks' files (tiny, clearly learnable) to the mini SentEval folder."""
    down = mini_senteval / "downstream"
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
    return mini_senteval


def run_cli(args, capsys):
    """Run ``pcctune ARGS`` through the real entry point; return (exit code, stdout + stderr)."""
    old = sys.argv
    sys.argv = ["pcctune", *args]
    try:
        with pytest.raises(SystemExit) as done:
            from pcctune.cli import main

            main()
            raise SystemExit(0)
    finally:
        sys.argv = old
    captured = capsys.readouterr()
    return done.value.code, captured.out + captured.err


def assert_one_line_error(code, output, pattern):
    assert code == 2
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error:") and pattern in lines[0], output
    assert "Traceback" not in output


def pairs_jsonl(path: Path, count: int = 48) -> Path:
    """A jsonl file of ``count`` scored pairs of the test sentences (scores 0–5, varied), for tiny training runs."""
    import json

    rows = [
        {"sentence1": SENTENCES[i % 12], "sentence2": SENTENCES[(i * 5 + 1) % 12], "score": (i * 7) % 11 / 2}
        for i in range(count)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def one_step_stage2(**stage) -> dict:
    """One Pearson step of 2 pairs on the stage-2 set, no dev set: the shared quickest training stage."""
    return {
        "name": "pcc",
        "loss": "pearson",
        "data": {"source": "stage2"},
        "batch_size": 2,
        "max_steps": 1,
        "dev": "none",
        **stage,
    }


def tiny_run(model: Path, senteval: Path, pairs: Path, out: Path, **stage) -> dict:
    """A one-stage Pearson run on ``pairs`` (6 steps of 8, dev on SICK trial every 2): the shared tiny config."""
    stage = {
        "name": "pcc",
        "loss": "pearson",
        "data": {"source": "pairs", "path": str(pairs)},
        "batch_size": 8,
        "max_steps": 6,
        "eval_steps": 2,
        "logging_steps": 1,
        "learning_rate": 1e-3,
        "dev": "sick-trial",
        **stage,
    }
    return {
        "model": str(model),
        "data_dir": str(senteval),
        "output_dir": str(out),
        "seed": 3,
        "evaluate_before": False,
        "stages": [stage],
    }


def write_run_config(folder: Path, model: Path, senteval: Path, out: Path, **stage) -> Path:
    """``tiny_run``'s config written as ``out.name``.yaml in ``folder``: what ``pcctune train`` reads."""
    import yaml

    config = tiny_run(model, senteval, pairs_jsonl(folder / "pairs.jsonl"), out, **stage)
    path = folder / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def uninterrupted(tiny_bert, shared_senteval, tmp_path_factory) -> dict:
    """One whole tiny run, uninterrupted: what every interrupted-and-resumed run must reproduce."""
    import json
    import subprocess

    folder = tmp_path_factory.mktemp("uninterrupted")
    config = write_run_config(folder, tiny_bert, shared_senteval, folder / "whole")
    done = subprocess.run(
        [sys.executable, "-m", "pcctune.cli", "train", str(config)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((folder / "whole" / "results.json").read_text())
