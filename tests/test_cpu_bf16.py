"""bf16 on a CPU that can only emulate it: one clear line naming the setting and the faster choice."""

from __future__ import annotations

import logging

import pytest

from pcctune.modeling import cpu_bf16
from pcctune.orchestration.run_checks import warn_bf16_on_cpu
from pcctune.training.config import RunConfig
from tests.conftest import one_step_stage2, run_cli

AVX2_ONLY = "processor\t: 0\nflags\t\t: fpu sse2 avx fma avx2\n"
XEON_BF16 = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512_bf16 avx512_fp16 amx_bf16\n"
ARM_BF16 = "processor\t: 0\nFeatures\t: fp asimd sve bf16\n"


@pytest.fixture()
def cpuinfo(monkeypatch, tmp_path):
    """Pretend the CPU is the one a given ``/proc/cpuinfo`` text describes."""
    monkeypatch.delenv(cpu_bf16.ISA_LIMIT_ENV, raising=False)

    def pretend(text: str | None) -> None:
        path = tmp_path / "cpuinfo"
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text, encoding="utf-8")
        monkeypatch.setattr(cpu_bf16, "CPUINFO", path)

    return pretend


@pytest.mark.parametrize(("text", "native"), [(AVX2_ONLY, False), (XEON_BF16, True), (ARM_BF16, True), (None, None)])
def test_native_bf16_is_read_from_the_cpus_flags(cpuinfo, text, native):
    cpuinfo(text)
    assert cpu_bf16.native_bf16() is native


def test_a_limit_on_onednns_instruction_sets_counts_as_a_cpu_without_bf16(cpuinfo, monkeypatch):
    cpuinfo(XEON_BF16)
    monkeypatch.setenv(cpu_bf16.ISA_LIMIT_ENV, "AVX2")
    assert cpu_bf16.native_bf16() is False
    monkeypatch.setenv(cpu_bf16.ISA_LIMIT_ENV, "AVX512_CORE_AMX")
    assert cpu_bf16.native_bf16() is True


def _bf16_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == cpu_bf16.__name__]


def test_eval_in_bf16_on_a_cpu_without_it_says_so_in_one_line(cpuinfo, caplog, capsys, tiny_bert, mini_senteval):
    cpuinfo(AVX2_ONLY)
    with caplog.at_level(logging.WARNING):
        code, output = run_cli(["eval", str(tiny_bert), "--data", str(mini_senteval), "--dtype", "bf16"], capsys)
    assert code == 0 and "STS12" in output  # the evaluation still runs
    (line,) = _bf16_lines(caplog)
    assert line.startswith("--dtype bf16: this CPU has no native bf16") and "fp32 is the faster choice" in line


def test_eval_in_bf16_on_a_cpu_with_it_runs_without_a_word(cpuinfo, caplog, capsys, tiny_bert, mini_senteval):
    cpuinfo(XEON_BF16)
    with caplog.at_level(logging.WARNING):
        code, _ = run_cli(["eval", str(tiny_bert), "--data", str(mini_senteval), "--dtype", "bf16"], capsys)
    assert code == 0 and _bf16_lines(caplog) == []


def test_a_run_asking_for_bf16_on_a_cpu_without_it_names_each_setting_in_one_line(cpuinfo, caplog):
    cpuinfo(AVX2_ONLY)

    def config(**run) -> RunConfig:
        return RunConfig.model_validate({"model": "m", **run})

    with caplog.at_level(logging.WARNING):
        warn_bf16_on_cpu(config(eval_dtype="bf16", stages=[one_step_stage2(bf16=True), one_step_stage2(name="fp32")]))
        warn_bf16_on_cpu(config(stages=[one_step_stage2()]))
    (line,) = _bf16_lines(caplog)
    assert line.startswith("eval_dtype: bf16, stage 'pcc': bf16: true: this CPU has no native bf16")
