"""A decoder's test evaluation under the papers' protocol with its LoRA adapter on the 16-bit base, as a QLoRA run's
test evaluations load it (``pipeline.load_for_evaluation``): wall and CPU seconds of the evaluation alone and its
seven scores, under the command line's CPU settings (named in the line printed).

    python benchmarks/results/speed/probe_decoder_eval.py FINAL_FOLDER
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a saved QLoRA stage (its final folder)")
    parser.add_argument("--data", default=os.environ.get("PCCTUNE_DATA", str(HERE.parents[3] / "shared" / "data")))
    args = parser.parse_args()

    import pcctune
    from pcctune.cpu_kind import this_cpu
    from pcctune.host_settings import command_line, settings_line, using
    from pcctune.modeling.build import build_model

    model = build_model(str(args.model), full_precision_base=True)
    with using(command_line()):
        started = (time.perf_counter(), time.process_time())
        result = pcctune.evaluate(model, protocol="paper-prompt", data=args.data, show_progress_bar=False)
        wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
        line = settings_line()
    found = {"model": str(args.model), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "sts": result.sts}
    print(json.dumps(found | {"cpu": this_cpu().identity, "settings": line}))


if __name__ == "__main__":
    main()
