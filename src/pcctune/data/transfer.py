"""SentEval transfer tasks: MR, CR, SUBJ, MPQA, SST2, TREC, MRPC (the usual files, read as SentEval does)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pcctune.data.senteval import downstream_dir
from pcctune.errors import PcctuneError, unknown

TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
BINARY_FILES = {
    "MR": ("rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("custrev.pos", "custrev.neg"),
    "SUBJ": ("subj.objective", "subj.subjective"),
    "MPQA": ("mpqa.pos", "mpqa.neg"),
}
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")  # the coarse classes, numbered as SentEval's trec.py


@dataclass
class TransferTask:
    """Sentences (or sentence pairs, for MRPC) with integer labels, split as SentEval splits them.

    ``splits`` maps ``train``/``dev``/``test`` to (texts, labels); a task with only ``all`` is
    evaluated by 10-fold cross-validation.
    """

    name: str
    splits: dict[str, tuple[list, list[int]]]
    files: list[Path] = field(default_factory=list)


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        raise PcctuneError(f"missing file: {path}")
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _binary(folder: Path, name: str) -> TransferTask:
    """Every line a sample, a blank one too (an empty sentence), as SentEval's ``binary.py`` reads them: its CR has
    3,775 samples and its MPQA 10,606 with the files' blank lines, and its folds are drawn over those counts."""
    positive, negative = (folder / f for f in BINARY_FILES[name])
    pos = [line.strip() for line in _lines(positive)]
    neg = [line.strip() for line in _lines(negative)]
    return TransferTask(name, {"all": (pos + neg, [1] * len(pos) + [0] * len(neg))}, [positive, negative])


def _sst2(folder: Path) -> TransferTask:
    splits, files = {}, []
    for split, file in (("train", "sentiment-train"), ("dev", "sentiment-dev"), ("test", "sentiment-test")):
        path = folder / "SST" / "binary" / file
        texts, labels = [], []
        for number, line in enumerate(_lines(path), start=1):
            if not line.strip():
                continue
            text, _, label = line.rpartition("\t")
            if label.strip() not in ("0", "1"):
                raise PcctuneError(f"{path}:{number}: expected a 0/1 label after a tab")
            texts.append(text.strip())
            labels.append(int(label))
        splits[split] = (texts, labels)
        files.append(path)
    return TransferTask("SST2", splits, files)


def _trec(folder: Path) -> TransferTask:
    splits, files = {}, []
    for split, file in (("train", "train_5500.label"), ("test", "TREC_10.label")):
        path = folder / "TREC" / file
        texts, labels = [], []
        for number, line in enumerate(_lines(path), start=1):
            if not line.strip():
                continue
            target, _, sentence = line.partition(" ")
            coarse = target.split(":")[0]
            if coarse not in TREC_CLASSES:
                raise PcctuneError(
                    f"{path}:{number}: unknown TREC class {coarse!r}; expected {', '.join(TREC_CLASSES)}"
                )
            labels.append(TREC_CLASSES.index(coarse))
            texts.append(sentence.strip())
        splits[split] = (texts, labels)
        files.append(path)
    return TransferTask("TREC", splits, files)


def _mrpc(folder: Path) -> TransferTask:
    splits, files = {}, []
    for split, file in (("train", "msr_paraphrase_train.txt"), ("test", "msr_paraphrase_test.txt")):
        path = folder / "MRPC" / file
        pairs, labels = [], []
        for number, line in enumerate(_lines(path)[1:], start=2):
            fields = line.split("\t")
            if len(fields) < 5:
                raise PcctuneError(f"{path}:{number}: expected 5 tab-separated fields")
            pairs.append((fields[3], fields[4]))
            labels.append(int(fields[0]))
        splits[split] = (pairs, labels)
        files.append(path)
    return TransferTask("MRPC", splits, files)


def load_transfer_task(senteval_dir: Path, name: str) -> TransferTask:
    """One of SentEval's transfer tasks (``TRANSFER_TASKS``) by name, its splits as SentEval reads them."""
    folder = downstream_dir(senteval_dir)
    if name in BINARY_FILES:
        return _binary(folder / name, name)
    loaders = {"SST2": _sst2, "TREC": _trec, "MRPC": _mrpc}
    if name not in loaders:
        raise PcctuneError(unknown("transfer task", name, list(TRANSFER_TASKS)))
    return loaders[name](folder)
