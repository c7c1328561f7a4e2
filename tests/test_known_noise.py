"""Notices of other libraries that say nothing to a pcctune user: dropped while pcctune runs, and only those."""

from __future__ import annotations

import logging
import subprocess
import sys

import pcctune
from pcctune.known_noise import BITSANDBYTES_CPU_LOGGER, BITSANDBYTES_KERNEL_NOTICE, known_noise_dropped


def test_only_the_kernel_notice_is_dropped_and_only_inside_the_block(caplog):
    logger = logging.getLogger(BITSANDBYTES_CPU_LOGGER)
    filters = list(logger.filters)
    notice = f"{BITSANDBYTES_KERNEL_NOTICE} from kernels-community: No module named 'kernels'."
    with caplog.at_level(logging.WARNING):
        with known_noise_dropped():
            logger.warning(notice)
            logger.warning("a real bitsandbytes problem")
        logger.warning(notice)
    assert [record.getMessage() for record in caplog.records] == ["a real bitsandbytes problem", notice]
    assert logger.filters == filters  # the host's logger as it was


def test_building_a_model_from_python_prints_no_kernel_notice(tiny_bert):
    # a fresh process: bitsandbytes speaks at its first import only (on CPUs with AVX512-BF16, without `kernels`)
    code = (
        "import logging, sys, pcctune\n"
        f"pcctune.build_model({str(tiny_bert)!r})\n"
        f"print('bitsandbytes' in sys.modules, logging.getLogger({BITSANDBYTES_CPU_LOGGER!r}).filters)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert BITSANDBYTES_KERNEL_NOTICE not in done.stderr
    assert done.stdout.split("\n")[-2] in ("True []", "False []")  # nothing left behind on the logger


def test_a_trainer_draws_the_card_widget_without_a_progress_bar(tiny_bert, tmp_path, capsys):
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainingArguments

    from pcctune.training.trainer import PcctuneTrainer

    model = pcctune.build_model(str(tiny_bert))
    rows = range(12)  # a few more rows than the five examples drawn, as any real training set has
    pairs = Dataset.from_dict(
        {"sentence1": [f"a man {i}" for i in rows], "sentence2": [f"a dog {i}" for i in rows], "score": list(rows)}
    )
    capsys.readouterr()
    args = SentenceTransformerTrainingArguments(output_dir=str(tmp_path), report_to=[])
    PcctuneTrainer(model=model, args=args, train_dataset=pairs, loss=pcctune.PearsonLoss(model))
    assert "widget" not in capsys.readouterr().err
    assert model.model_card_data.widget  # the card keeps its examples
