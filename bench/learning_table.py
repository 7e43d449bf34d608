#!/usr/bin/python3
"""The table of bench/learning.sh: per epoch, validation macro F1 and training loss of
petal-tui and of PyTorch, each the mean over the seeds with its range, and the gap
between the means. Reads OUTDIR/petal-SEED.log and OUTDIR/torch-SEED.log (or any logs
named on the command line after OUTDIR's, petal-*.log and torch-*.log)."""
import glob
import os
import re
import sys

EPOCH = re.compile(r"^epoch (\d+)/\d+\b.*?\bloss ([0-9.]+) - acc ([0-9.]+).*\bval_f1 ([0-9.]+)")


def curves(path):
    """{epoch: (train loss, train acc, val F1)} of one log."""
    out = {}
    with open(path) as f:
        for line in f:
            m = EPOCH.match(line)
            if m:
                out[int(m.group(1))] = (float(m.group(2)), float(m.group(3)), float(m.group(4)))
    return out


def stats(runs, epoch, k):
    v = [r[epoch][k] for r in runs if epoch in r]
    if not v:
        return None
    return sum(v) / len(v), min(v), max(v), len(v)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    petal = [curves(p) for p in sorted(glob.glob(os.path.join(d, "petal-*.log")))]
    torch = [curves(p) for p in sorted(glob.glob(os.path.join(d, "torch-*.log")))]
    petal = [r for r in petal if r]
    torch = [r for r in torch if r]
    if not petal or not torch:
        raise SystemExit("no finished epochs in %s" % d)
    print("%d petal-tui and %d PyTorch runs; mean [min, max] over the seeds" % (len(petal), len(torch)))
    print("%5s | %-22s %-22s %7s | %-22s %-22s" % ("epoch", "val F1 petal-tui", "val F1 PyTorch",
                                                  "gap", "train loss petal-tui",
                                                  "train loss PyTorch"))
    worst, epochs = 0.0, sorted(set().union(*petal) & set().union(*torch))
    for e in epochs:
        p, t = stats(petal, e, 2), stats(torch, e, 2)
        pl, tl = stats(petal, e, 0), stats(torch, e, 0)
        gap = p[0] - t[0]
        worst = max(worst, abs(gap))
        print("%5d | %.3f [%.3f, %.3f]    %.3f [%.3f, %.3f]    %+.3f | %.3f [%.3f, %.3f]    "
              "%.3f [%.3f, %.3f]" % (e, p[0], p[1], p[2], t[0], t[1], t[2], gap, pl[0], pl[1],
                                     pl[2], tl[0], tl[1], tl[2]))
    print("largest gap between the mean F1s: %.3f" % worst)


if __name__ == "__main__":
    main()
