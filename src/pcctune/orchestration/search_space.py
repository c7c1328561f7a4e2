"""A sweep's search space: dotted config keys → optuna distributions, read and checked from YAML, sampled per
trial, where a winning value sits in it, and the trials drawn across it.

A comparison of methods gives each the same search over a space that holds each one's good region; a winner at the
edge of the space may be held back by the space rather than by its method (`reproductions/leakage/README.md`:
CoSENT's and AnglE's first winners, at the space's longest schedule, read below the base model; grown from 4 to 32
epochs they read level with the Pearson loss). ``edges`` finds such values, so ``pcctune sweep`` can say so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pcctune.errors import PcctuneError, first_refusal
from pcctune.plotting import save_figure, subplots
from pcctune.yaml_input import read_yaml

EDGE = 0.1
"""A numeric value within this share of its range from a bound (on the log scale for a log distribution) sits at
the edge; so does the smallest or largest of three or more numeric choices (two choices always have one at each
end, which says nothing)."""


class Distribution(BaseModel):
    """One key's distribution, as optuna's ``suggest_float`` / ``suggest_int`` / ``suggest_categorical`` take it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    type: Literal["float", "int", "categorical"]
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: list[Any] | None = None


def load_space(path: Path) -> dict[str, Distribution]:
    """The search space: dotted config keys → distributions (one clear error for a bad file)."""
    raw = read_yaml(path, "search space file") or {}
    if not isinstance(raw, dict) or not raw:
        raise PcctuneError(f"{path}: a search space is a YAML mapping of dotted keys to distributions")
    space = {}
    for key, value in raw.items():
        try:
            space[key] = spec = Distribution.model_validate(value)
        except ValidationError as error:
            where, message = first_refusal(error)
            raise PcctuneError(f"{path}: {key}: {where + ': ' if where else ''}{message}") from None
        if spec.type == "categorical" and not spec.choices:
            raise PcctuneError(f"{path}: {key}: a categorical distribution needs choices")
        if spec.type != "categorical" and (spec.low is None or spec.high is None or spec.low >= spec.high):
            raise PcctuneError(f"{path}: {key}: a {spec.type} distribution needs low < high")
        if spec.log and spec.type != "categorical" and (spec.low or 0) <= 0:
            raise PcctuneError(f"{path}: {key}: a log distribution needs low > 0")
    return space


def space_values(space: dict[str, Distribution]) -> list[tuple[str, Any]]:
    """Every value a trial may give a key that shows whether the config takes it: a numeric distribution's
    bounds, every choice of a categorical one."""
    return [
        (key, value)
        for key, spec in space.items()
        for value in (
            spec.choices or []
            if spec.type == "categorical"
            else [int(spec.low or 0), int(spec.high or 0)]
            if spec.type == "int"
            else [spec.low, spec.high]
        )
    ]


def suggest(trial: Any, space: dict[str, Distribution]) -> dict[str, Any]:
    """The trial's value for every key of the space (as ``--set`` overrides)."""
    values: dict[str, Any] = {}
    for key, spec in space.items():
        if spec.type == "categorical":
            values[key] = trial.suggest_categorical(key, spec.choices)
        elif spec.type == "int":
            values[key] = trial.suggest_int(key, int(spec.low or 0), int(spec.high or 0), log=spec.log)
        else:
            values[key] = trial.suggest_float(key, float(spec.low or 0), float(spec.high or 0), log=spec.log)
    return values


def _scaled(value: float, spec: Distribution) -> float:
    return math.log(value) if spec.log else value


def edge(value: Any, spec: Distribution) -> str | None:
    """Which edge of ``spec`` ``value`` sits at (``"the low end (1e-05)"``, ``"the largest of [1, 2, 4]"``), or
    ``None`` inside the space."""
    side = edge_side(value, spec)
    if side is None:
        return None
    if spec.type == "categorical":
        numbers = sorted(spec.choices or [])
        return f"the {'smallest' if side == 'low' else 'largest'} of {numbers}"
    return f"the low end ({float(spec.low or 0):g})" if side == "low" else f"the high end ({float(spec.high or 0):g})"


def edge_side(value: Any, spec: Distribution) -> Literal["low", "high"] | None:
    """Whether ``value`` sits at the low or the high edge of ``spec`` (a range's outer ``EDGE`` share, on its log
    scale for a log range; the smallest or largest of three or more numeric choices), else ``None``."""
    if spec.type == "categorical":
        choices = spec.choices or []
        numbers = [c for c in choices if isinstance(c, int | float) and not isinstance(c, bool)]
        if len(numbers) < 3 or len(numbers) != len(choices):
            return None
        return "low" if value == min(numbers) else "high" if value == max(numbers) else None
    low, high = float(spec.low or 0), float(spec.high or 0)
    share = (_scaled(float(value), spec) - _scaled(low, spec)) / (_scaled(high, spec) - _scaled(low, spec))
    return "low" if share <= EDGE else "high" if share >= 1 - EDGE else None


def edges(space: dict[str, Distribution], params: dict[str, Any]) -> dict[str, str]:
    """Each searched key whose value in ``params`` sits at an edge of its distribution, with that edge."""
    found = {key: edge(params[key], spec) for key, spec in space.items() if key in params}
    return {key: where for key, where in found.items() if where is not None}


PANELS_A_ROW = 4
"""The panels of ``plot_space`` a row holds: a space of more keys wraps onto further rows."""


def plot_space(
    space: dict[str, Distribution],
    trials: Sequence[tuple[dict[str, Any], float]],
    winner: tuple[dict[str, Any], float],
    path: Path,
) -> Path:
    """One panel per searched key: each finished trial's dev score (× 100) against its value, the winner starred and
    a numeric range's bounds drawn, so that a winner at an edge of the space shows. ``trials`` and ``winner``:
    ``(params, dev score as a fraction)``."""
    columns = min(len(space), PANELS_A_ROW)
    rows = math.ceil(len(space) / columns)
    figure, axes = subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(space) :]:
        ax.set_visible(False)
    for ax, (key, spec) in zip(axes.flat, space.items(), strict=False):
        at = _positions(ax, spec)
        shown = [(at(params[key]), score * 100) for params, score in trials if key in params]
        ax.scatter([x for x, _ in shown], [y for _, y in shown], s=18, color="tab:blue", label="trial")
        ax.scatter([at(winner[0][key])], [winner[1] * 100], s=140, marker="*", color="tab:red", label="winner")
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("value (log scale)" if spec.log else "value")
    for row in axes:
        row[0].set_ylabel("dev (Spearman × 100)")
    axes[0][0].legend(fontsize=8)
    return save_figure(figure, path)


def _positions(ax: Any, spec: Distribution) -> Any:
    """Where a value of ``spec`` goes on ``ax``'s x axis (a categorical's choices in their order, as labels), with a
    numeric range's bounds drawn."""
    if spec.type == "categorical":
        labels = [str(choice) for choice in spec.choices or []]
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        return lambda value: labels.index(str(value))
    for bound in (spec.low, spec.high):
        ax.axvline(bound, color="grey", linestyle=":", linewidth=1)
    if spec.log:
        ax.set_xscale("log")
    return lambda value: value
