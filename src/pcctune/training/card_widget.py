"""sentence-transformers' model-card callback, with the card's widget examples drawn quietly.

When a trainer is built, the callback picks a few short rows of the training (or eval) data as the widget
examples of the card (the Hub's inference examples) behind a "Computing widget examples" progress bar, which
sentence-transformers offers no switch for (``generate_widget_examples`` governs the card's similarity snippet,
not this). The examples are drawn by its own ``set_widget_examples`` first, with that bar's output dropped; the
callback then finds them set and draws none.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr
from typing import Any, cast

from sentence_transformers.base.model import BaseModel
from sentence_transformers.base.model_card import BaseModelCardData
from sentence_transformers.base.trainer import BaseTrainer
from sentence_transformers.base.training_args import BaseTrainingArguments
from sentence_transformers.sentence_transformer.model_card import SentenceTransformerModelCardCallback
from transformers import TrainerControl, TrainerState
from typing_extensions import override


class QuietWidgetCallback(SentenceTransformerModelCardCallback):
    """``SentenceTransformerModelCardCallback`` whose widget examples come without a progress bar."""

    @override
    def on_init_end(  # type: ignore[override]  # sentence-transformers' own signature
        self,
        args: BaseTrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: BaseModel,
        trainer: BaseTrainer,
        **kwargs: Any,
    ) -> None:
        card = cast(BaseModelCardData, model.model_card_data)
        dataset = trainer.eval_dataset or trainer.train_dataset
        if not card.widget and dataset:
            with redirect_stderr(io.StringIO()):  # the progress bar is all it writes
                card.set_widget_examples(dataset)
        super().on_init_end(args, state, control, model, trainer, **kwargs)
