#!/usr/bin/python3
"""bench/plan.sh's reader of a run's event file: prints "START IPS", the seconds from
T0 (the command's start, epoch seconds) to the event file's creation (once the
replicas are ready; its birth time, to the nanosecond) and the training images per
second over the updates after the first two.

    plan_events.py RUN_DIR T0 IMAGES_PER_UPDATE

The event file is TFRecord framing (length, its CRC, data, its CRC) around Event
protos whose field 1 is wall_time (a double) and field 2 the step (a varint)."""
import glob
import re
import struct
import subprocess
import sys


def walltimes(path):
    """{step: wall time of its first event}."""
    data, o, out = open(path, "rb").read(), 0, {}
    while o + 12 <= len(data):
        n = struct.unpack("<Q", data[o:o + 8])[0]
        rec = data[o + 12:o + 12 + n]
        o += 12 + n + 4
        if len(rec) < n or rec[:1] != b"\x09":
            continue
        wt, step, i = struct.unpack("<d", rec[1:9])[0], 0, 9
        if rec[i:i + 1] == b"\x10":
            i, shift = i + 1, 0
            while True:
                b = rec[i]
                i += 1
                step |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
        out.setdefault(step, wt)
    return out


def born(path):
    """The file's creation time to the nanosecond (statx's birth time, which `stat`
    prints), or None where the file system does not keep it. The first record's own
    wall time carries whole seconds only, as TensorFlow writes it."""
    try:
        out = subprocess.run(["stat", "-c", "%W %w", path], capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    frac = re.search(r"\.(\d+)", out[2]) if len(out) > 2 else None
    if not out or out[0] in ("0", "-") or not frac:
        return None
    return int(out[0]) + float("0." + frac.group(1))


def main():
    run, t0, per = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    files = glob.glob(run + "/train/events*")
    if not files:
        print("- -")
        return
    w = walltimes(files[0])
    steps = sorted(w)
    b = born(files[0])
    start = "%.1f" % ((b if b is not None else w[steps[0]]) - t0)
    later = [s for s in steps if s >= 2]
    if len(later) < 2:
        print(start, "-")
        return
    secs = w[later[-1]] - w[later[0]]
    print(start, "%.1f" % (per * (later[-1] - later[0]) / secs) if secs > 0 else "-")


if __name__ == "__main__":
    main()
