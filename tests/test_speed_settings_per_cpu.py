"""The ``pcctune`` command's CPU speed settings follow the CPU's kind, told by vendor, family, model and flags (faked
``/proc/cpuinfo`` texts here): those measured fastest on a measured kind, the workers alone on any other, and
``PCCTUNE_CPU_SPEEDUPS`` over both; one line in the log says which and why."""

from __future__ import annotations

import logging

import pytest

from pcctune import host_settings as hs
from pcctune.cli import process as cli
from pcctune.cpu_kind import CPUKind, parse_cpuinfo
from pcctune.host_settings import LIBRARY_DEFAULT, SPEEDUPS, SPEEDUPS_ENV, WORKERS, command_line_choice


def cpuinfo(vendor: str, family: int, model: int, name: str, flags: str) -> CPUKind:
    text = (
        f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: {name}\nflags\t\t: fpu sse2 {flags}\n\nprocessor\t: 1\nvendor_id\t: SomeoneElse\n"
    )
    return parse_cpuinfo(text)


ZEN3 = cpuinfo("AuthenticAMD", 25, 1, "AMD EPYC 7B13", "avx avx2 fma")
ZEN2 = cpuinfo("AuthenticAMD", 23, 49, "AMD EPYC 7B12", "avx avx2 fma")
ZEN4 = cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC 9B14", "avx2 fma avx512f avx512bw avx512_vnni avx512_bf16")
ZEN5 = cpuinfo("AuthenticAMD", 26, 2, "AMD EPYC 9B45", "avx2 fma avx512f avx512bw avx512_vnni avx512_bf16")
OLD_AMD = cpuinfo("AuthenticAMD", 21, 2, "AMD Opteron 6380", "avx fma")
XEON = cpuinfo("GenuineIntel", 6, 207, "Intel(R) Xeon(R) Processor", "avx2 fma avx512f avx512bw avx512_bf16")
XEON_AMX = cpuinfo("GenuineIntel", 6, 207, "Intel(R) Xeon(R) Processor", "avx2 avx512f avx512_bf16 amx_tile amx_bf16")
ARM = parse_cpuinfo("CPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd0c\nFeatures\t: asimd\n")


@pytest.fixture(autouse=True)
def no_choice_in_the_environment(monkeypatch):
    monkeypatch.delenv(SPEEDUPS_ENV, raising=False)


@pytest.mark.parametrize(
    ("cpu", "settings", "line"),
    [
        (ZEN3, WORKERS, "CPU kind AVX2-only EPYC (Zen 2/3): workers alone (measured fastest on this kind)"),
        (ZEN2, WORKERS, "CPU kind AVX2-only EPYC (Zen 2/3): workers alone (measured fastest on this kind)"),
        (ZEN5, SPEEDUPS, "CPU kind Zen 5 EPYC: workers, onednn, keep_freed_memory (measured fastest on this kind)"),
        (ZEN4, SPEEDUPS, "CPU kind Zen 4 EPYC: workers, onednn, keep_freed_memory (measured fastest on this kind)"),
        (XEON, WORKERS, "CPU kind AVX-512 Xeon without AMX: workers alone (measured fastest on this kind)"),
    ],
)
def test_a_measured_kind_gets_the_settings_measured_fastest_there(cpu, settings, line):
    assert command_line_choice(cpu) == (settings, line)


@pytest.mark.parametrize("cpu", [XEON_AMX, OLD_AMD, ARM, CPUKind("unknown", None, None, "unknown", frozenset())])
def test_a_cpu_of_no_measured_kind_gets_the_workers_alone(cpu):
    """A Xeon with AMX is not the measured Xeon without it; an older AMD, an Arm CPU and one that names nothing are
    no measured kind."""
    settings, line = command_line_choice(cpu)
    assert settings == WORKERS == hs.UNMEASURED
    assert line.startswith(f"unmeasured CPU kind ({cpu.vendor} family {cpu.family} model {cpu.model}): workers alone")
    assert line.endswith("(within 1 % of none or faster on every measured kind)")


def test_the_environment_chooses_over_the_cpu_kind(monkeypatch):
    monkeypatch.setenv(SPEEDUPS_ENV, "0")
    assert command_line_choice(ZEN5) == (LIBRARY_DEFAULT, f"CPU speed settings: none ({SPEEDUPS_ENV}=0)")
    monkeypatch.setenv(SPEEDUPS_ENV, "onednn")
    settings, line = command_line_choice(ZEN3)
    assert (settings.onednn, settings.workers) == (True, 1)
    assert line == f"CPU speed settings: onednn alone ({SPEEDUPS_ENV}=onednn)"


def test_zen_4_is_told_from_zen_3_by_its_avx512_and_from_zen_5_by_its_family():
    """Zen 4 shares the AVX2-only EPYC's family and Zen 5's flags: each kind claims its own CPU alone."""
    kinds = {cpu: hs.measured_kind(cpu).name for cpu in (ZEN3, ZEN4, ZEN5)}
    assert kinds == {ZEN3: "AVX2-only EPYC (Zen 2/3)", ZEN4: "Zen 4 EPYC", ZEN5: "Zen 5 EPYC"}


def test_a_kind_can_name_its_models():
    kind = hs.MeasuredKind("one model", "AuthenticAMD", (25,), SPEEDUPS, "measured", has=("avx2",), models=(1,))
    assert kind.matches(ZEN3) and not kind.matches(ZEN4) and not kind.matches(ZEN5)


def test_every_measured_kind_cites_its_measurement_and_no_two_kinds_claim_one_cpu():
    for kind in hs.MEASURED_KINDS:
        assert "benchmarks/results/speed/README.md" in kind.measured and " s" in kind.measured
    for cpu in (ZEN2, ZEN3, ZEN4, ZEN5, XEON, XEON_AMX, OLD_AMD, ARM):
        assert sum(kind.matches(cpu) for kind in hs.MEASURED_KINDS) <= 1


def test_the_command_line_runs_with_its_kinds_choice_and_says_so_once(monkeypatch, caplog):
    seen = []
    monkeypatch.setattr(hs, "this_cpu", lambda: ZEN5)
    monkeypatch.setattr(cli, "app", lambda **kwargs: seen.append(hs.host_settings()) or 0)
    hs._log_once.cache_clear()
    with caplog.at_level(logging.INFO, logger=hs.__name__):
        cli._app(["eval"])
        cli._app(["eval"])
    assert seen == [SPEEDUPS, SPEEDUPS]
    assert [r.getMessage() for r in caplog.records if r.name == hs.__name__] == [command_line_choice(ZEN5).why]


def test_debug_shows_the_log_line_of_the_settings_and_leaves_the_logger_as_it_was(monkeypatch, capsys):
    """``--debug`` puts pcctune's INFO log on stderr for the command, so a user sees which settings are on and why;
    without it the line stays out of the output; either way the logger ends as it began."""
    monkeypatch.setattr(hs, "this_cpu", lambda: ZEN5)
    monkeypatch.setattr(cli, "app", lambda **kwargs: 0)
    logger = logging.getLogger("pcctune")
    before = (list(logger.handlers), logger.level)
    for argv, shown in ((["eval"], False), (["eval", "--debug"], True)):
        hs._log_once.cache_clear()
        with pytest.raises(SystemExit):
            cli._run(argv)
        err = capsys.readouterr().err
        assert (f"pcctune.host_settings: {command_line_choice(ZEN5).why}" in err) is shown, err
        assert (list(logger.handlers), logger.level) == before


def test_a_record_says_which_cpu_settings_were_on_and_why(monkeypatch, tiny_bert, mini_senteval, tmp_path, capsys):
    """``pcctune eval``'s record holds the command line's line for the CPU's kind; a library call, its own."""
    import json

    from pcctune.orchestration.evaluate import run_eval
    from tests.conftest import run_cli

    monkeypatch.setattr(hs, "this_cpu", lambda: XEON)
    out = tmp_path / "r.json"
    code, output = run_cli(["eval", str(tiny_bert), "--data", str(mini_senteval), "--output", str(out)], capsys)
    assert code == 0, output
    assert json.loads(out.read_text())["cpu_settings"] == command_line_choice(XEON).why
    called = run_eval(str(tiny_bert), mini_senteval)  # the Python API: none of the command line's settings
    assert called.cpu_settings == "CPU speed settings: none (chosen by the caller)"
