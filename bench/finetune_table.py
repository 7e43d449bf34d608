#!/usr/bin/python3
"""The table of bench/finetune_keras.sh: per epoch, each log's validation macro F1,
validation accuracy, training loss and epoch seconds, side by side, as markdown.
Reads the logs named on the command line (petal-tui's `--headless` output or its
run folder's log.txt, and bench/torch_finetune.py's output), each as LABEL=PATH.

  bench/finetune_table.py petal-tui=OUT/petal-base.log PyTorch=OUT/torch-base.log
"""
import re
import sys

# petal-tui: "epoch 3/10 - 215 updates - 80.1s - ... - loss L - acc A - val_loss .. - val_acc V - val_f1 F"
# PyTorch:   "epoch 3/10 - 80.1s - loss L - acc A - val_loss .. - val_acc V - val_f1 F"
EPOCH = re.compile(r"\bepoch (\d+)/\d+\b.*? - ([0-9.]+)s - .*?\bloss ([0-9.]+) - acc [0-9.]+ - "
                   r"val_loss [0-9.]+ - val_acc ([0-9.]+) - val_f1 ([0-9.]+)")


def curve(path):
    """[(epoch, seconds, train loss, val acc, val F1)] of one log."""
    out = {}
    with open(path) as f:
        for line in f:
            m = EPOCH.search(line)
            if m:
                e = int(m.group(1))
                out[e] = (e, float(m.group(2)), float(m.group(3)), float(m.group(4)),
                          float(m.group(5)))
    return [out[e] for e in sorted(out)]


def main():
    runs = []
    for arg in sys.argv[1:]:
        label, _, path = arg.partition("=")
        if not path:
            label, path = arg, arg
        c = curve(path)
        if not c:
            print("%s: no finished epochs in %s" % (label, path), file=sys.stderr)
            continue
        runs.append((label, c))
    if not runs:
        raise SystemExit("no finished epochs in any log")
    print("| run | what | " + " | ".join(str(e + 1) for e in range(max(len(c) for _, c in runs)))
          + " | best |")
    print("|---|---|" + "---:|" * (max(len(c) for _, c in runs) + 1))
    for label, c in runs:
        for k, what, fmt in ((4, "val macro F1", "%.4f"), (3, "val accuracy", "%.4f"),
                             (2, "train loss", "%.4f"), (1, "epoch s", "%.0f")):
            v = [r[k] for r in c]
            best = ("**" + fmt % max(v) + "** (epoch %d)" % c[v.index(max(v))][0]
                    if k in (3, 4) else fmt % sum(v) + " in all" if k == 1 else "")
            print("| %s | %s | %s | %s |" % (label, what, " | ".join(fmt % x for x in v), best))


if __name__ == "__main__":
    main()
