"""What the PyTorch speed peers share (bench/torch_finetune_speed.py,
torch_bf16_speed.py, torch_small.py): the header naming the versions, CPU and kernel
set, the timing loop of training steps, and the --serve loop bench_peer.h talks to
(a request a line, one answer a line: "ok ..." or "error TEXT"; "quit" ends it)."""
import re
import sys
import time

import torch
import torchvision


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def header():
    cap = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return ('torch %s  torchvision %s  cpu "%s"  kernels %s  oneDNN %s'
            % (torch.__version__, torchvision.__version__, cpu_model(),
               cap.group(1) if cap else "?", torch.backends.mkldnn.is_available()))


def timed(step, n, min_s, warmup=3):
    """Images/s of step() (n images each) after warmup steps, over at least min_s
    seconds: by the wall clock, and per CPU-second of this process (all its threads)."""
    for _ in range(warmup):
        step()
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        step()
        steps += 1
        dt = time.perf_counter() - t0
        if dt >= min_s:
            return steps * n / dt, steps * n / (time.process_time() - c0)


def serve(answer):
    """Reads requests from stdin, a line each, and prints answer(words) for each:
    the text after "ok ". An exception is printed as "error TEXT"; the server goes on."""
    print("ready " + header(), flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "quit":
            break
        try:
            print("ok " + answer(parts), flush=True)
        except Exception as ex:  # the driver prints it
            print("error %s" % str(ex).replace("\n", " "), flush=True)
