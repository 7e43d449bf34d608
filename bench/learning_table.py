#!/usr/bin/python3
"""The table of bench/learning.sh: per epoch, validation macro F1 and training loss of
petal-tui and of PyTorch, each the mean over the seeds with its range, and the gap
between the means; then each side's wall time to reach each target F1 (from the
command's start to the end of the validation of the first epoch at or above the target).
PyTorch's epoch seconds count its validation: the log's wall_s minus its epochs' seconds
is the start-up, then the epochs' seconds. petal-tui's count training only, so its
times are read from its run folder (OUTDIR/petal-run-SEED, which learning.sh keeps):
the wall time of each epoch's validation events, against the command's start (the
log's modification time, written when the command exited, minus wall_s); a log
without its run folder falls back to PyTorch's way, which puts every validation
before the first epoch.

    learning_table.py OUTDIR [TARGET ...]     (default targets 0.75 0.80)

Reads OUTDIR/petal-SEED.log and OUTDIR/torch-SEED.log. Either side may be missing."""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plan_events  # noqa: E402

EPOCH = re.compile(r"^epoch (\d+)/\d+\b.*? - ([0-9.]+)s\b.*?\bloss ([0-9.]+) - acc ([0-9.]+)"
                   r".*\bval_f1 ([0-9.]+)")
WALL = re.compile(r"^wall_s ([0-9.]+)")


def curves(path):
    """({epoch: (train loss, train acc, val F1, seconds)}, wall seconds or None)."""
    out, wall = {}, None
    with open(path) as f:
        for line in f:
            m = EPOCH.match(line)
            if m:
                out[int(m.group(1))] = (float(m.group(3)), float(m.group(4)),
                                        float(m.group(5)), float(m.group(2)))
            m = WALL.match(line)
            if m:
                wall = float(m.group(1))
    return out, wall


def petal_ends(log, wall):
    """{epoch: seconds from the command's start to the end of its validation}, from the
    run folder beside a petal-tui log; {} where it or its events are missing."""
    name = os.path.basename(log).replace("petal-", "petal-run-", 1)[:-4]
    run = os.path.join(os.path.dirname(log), name)
    events = glob.glob(os.path.join(run, "validation", "events.out.tfevents.*"))
    if wall is None or not events or not os.path.exists(os.path.join(run, "history.json")):
        return {}
    with open(os.path.join(run, "history.json")) as f:
        history = json.load(f)
    times = {}
    for path in events:
        times.update(plan_events.walltimes(path))
    start = os.path.getmtime(log) - wall
    ends, step = {}, 0
    for h in history:
        step += h["updates"]
        if step in times:
            ends[h["epoch"]] = times[step] - start
    return ends


def stats(runs, epoch, k):
    v = [r[epoch][k] for r in runs if epoch in r]
    if not v:
        return None
    return sum(v) / len(v), min(v), max(v), len(v)


def time_to(run, wall, target, ends=None):
    """Seconds from the command's start to the end of the first epoch at F1 >= target
    (its validation included)."""
    epochs = sorted(run)
    start = wall - sum(run[e][3] for e in epochs) if wall is not None else 0.0
    t = start
    for e in epochs:
        t += run[e][3]
        if run[e][2] >= target:
            return (ends[e] if ends and e in ends else t), e
    return None, None


def fmt(s):
    return "-" if s is None else "%.3f [%.3f, %.3f]" % (s[0], s[1], s[2])


def side(d, name):
    got = []
    for p in sorted(glob.glob(os.path.join(d, name + "-*.log"))):
        run, wall = curves(p)
        if run:
            got.append((run, wall, petal_ends(p, wall) if name == "petal" else {}))
    return got


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    targets = [float(t) for t in sys.argv[2:]] or [0.75, 0.80]
    petal, torch = side(d, "petal"), side(d, "torch")
    if not petal and not torch:
        raise SystemExit("no finished epochs in %s" % d)
    pr, tr = [r for r, _, _ in petal], [r for r, _, _ in torch]
    print("%d petal-tui and %d PyTorch runs; mean [min, max] over the seeds" % (len(pr), len(tr)))
    print("%5s | %-22s %-22s %7s | %-22s %-22s" % ("epoch", "val F1 petal-tui", "val F1 PyTorch",
                                                  "gap", "train loss petal-tui",
                                                  "train loss PyTorch"))
    epochs = sorted(set().union(*pr, *tr))
    for e in epochs:
        p, t = stats(pr, e, 2), stats(tr, e, 2)
        gap = "%+.3f" % (p[0] - t[0]) if p and t else "-"
        print("%5d | %-22s %-22s %7s | %-22s %-22s" % (e, fmt(p), fmt(t), gap,
                                                      fmt(stats(pr, e, 0)), fmt(stats(tr, e, 0))))
    print("wall time to a validation F1 (s, from the command's start; per seed, then the mean "
          "of the seeds that reached it):")
    for target in targets:
        for name, runs in (("petal-tui", petal), ("PyTorch", torch)):
            if not runs:
                continue
            got = [time_to(r, w, target, ends) for r, w, ends in runs]
            secs = [t for t, _ in got if t is not None]
            each = " ".join("-" if t is None else "%.0f (epoch %d)" % (t, e) for t, e in got)
            mean = "%.0f s, %d of %d seeds" % (sum(secs) / len(secs), len(secs), len(got)) \
                if secs else "not reached"
            print("  F1 %.2f %-9s %s: %s" % (target, name, each, mean))
    for name, runs in (("petal-tui", petal), ("PyTorch", torch)):
        walls = [w for _, w, _ in runs if w is not None]
        if walls:
            print("  whole run %-9s %s s" % (name, " ".join("%.0f" % w for w in walls)))


if __name__ == "__main__":
    main()
