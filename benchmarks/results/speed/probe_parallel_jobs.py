"""Two training processes of one thread each against one process of two threads, on a 2-core CPU: the question
behind a grid's ``--jobs`` (``reproductions._common.run_jobs``). Each worker trains all-MiniLM-L6-v2 with the
Pearson loss (Pcc-tuning eq. 8, ``pcctune.losses.pearson.pearson_loss``) on STS-B train pairs, batch 64, for
``STEPS`` timed steps after two warm-up steps; the two layouts alternate ``ROUNDS`` times. Throughput is steps a
second summed over the processes running at once. Run on a quiet machine (a running grid paused):
PCCTUNE_DATA=DIR python THIS (its output: the .log beside it)."""

import subprocess
import sys
import time

ROUNDS, STEPS, BATCH = 2, 40, 64


def worker(threads: int) -> None:
    """Train ``STEPS`` timed steps with ``threads`` threads and print the seconds they took."""
    import torch

    torch.set_num_threads(threads)
    from pcctune.data.cache import senteval_folder
    from pcctune.data.senteval import load_stsb
    from pcctune.losses.pearson import pearson_loss
    from pcctune.modeling.build import build_model

    model = build_model("all-MiniLM-L6-v2")
    pairs = load_stsb(senteval_folder(), "train").pairs
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-5)
    model.train()

    def step(index: int) -> None:
        batch = pairs[BATCH * index : BATCH * (index + 1)]
        u = model(model.preprocess([p.sentence1 for p in batch]))["sentence_embedding"]
        v = model(model.preprocess([p.sentence2 for p in batch]))["sentence_embedding"]
        loss = pearson_loss(u, v, torch.tensor([p.score for p in batch]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for index in range(2):  # warm-up steps, not timed
        step(index)
    started = time.perf_counter()
    for index in range(2, STEPS + 2):
        step(index)
    print(time.perf_counter() - started, flush=True)


def layout(processes: int, threads: int) -> float:
    """Steps a second of ``processes`` workers started together, ``threads`` threads each."""
    command = [sys.executable, __file__, "--worker", str(threads)]
    running = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for _ in range(processes)
    ]
    return sum(STEPS / float(p.communicate()[0].split()[-1]) for p in running)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(int(sys.argv[2]))
        sys.exit()
    from pcctune.cpu_kind import this_cpu

    print(this_cpu().identity)
    for round_ in range(1, ROUNDS + 1):
        one = layout(1, 2)
        two = layout(2, 1)
        layouts = f"1 process x 2 threads {one:.3f} steps/s, 2 processes x 1 thread {two:.3f} steps/s"
        print(f"round {round_}: {layouts}, ratio {two / one:.2f}")
