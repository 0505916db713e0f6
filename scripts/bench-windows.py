#!/usr/bin/env python3
"""Attribute perf samples to the overhead windows of `docjobs bench`.

A Go CPU profile cannot be cut by time, and most of a bench job's wall time
is the provider wait, when the service does little. This reads the windows
`docjobs bench --windows FILE` wrote (per job: create -> last provider call
seen, last answer written -> end seen) and the samples of `perf record -k
CLOCK_MONOTONIC -g`, and prints, per window kind, the CPU per job spent in
each function (inclusive), for the service's jobs and for the floor's.

    perf record -F 1999 -g -k CLOCK_MONOTONIC -o perf.data -- \\
        docjobs bench --jobs 60 --windows windows.txt
    perf script --ns -F comm,tid,time,ip,sym -i perf.data > perf.txt
    scripts/bench-windows.py perf.txt windows.txt [--match REGEX] [--top N] [--skip 2]
"""
import argparse
import bisect
import collections
import re
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("perf_script")
    ap.add_argument("windows")
    ap.add_argument("--match", help="list only functions matching this regex")
    ap.add_argument("--top", type=int, default=60)
    ap.add_argument("--skip", type=int, default=2, help="warm-up jobs of each run to leave out")
    ap.add_argument("--hz", type=float, default=1999, help="perf's sampling frequency (-F)")
    a = ap.parse_args()

    jobs = collections.defaultdict(list)
    for line in open(a.windows):
        if line.startswith("#") or not line.strip():
            continue
        run, created, last_call, last_answer, done = line.split()
        jobs[run].append((int(created), int(last_call), int(last_answer), int(done)))
    windows = []  # (start, end, kind)
    for run, js in jobs.items():
        for created, last_call, last_answer, done in js[a.skip:]:
            windows.append((created, last_call, run + " before the last call"))
            windows.append((last_answer, done, run + " after the last answer"))
    windows.sort()
    starts = [w[0] for w in windows]
    njobs = {run: max(1, len(js) - a.skip) for run, js in jobs.items()}

    def kinds(t):
        i = bisect.bisect_right(starts, t) - 1
        out = []
        for j in range(i, max(-1, i - 4), -1):
            s, e, k = windows[j]
            if s <= t <= e:
                out.append(k)
        return out

    cum = collections.defaultdict(collections.Counter)
    samples = collections.Counter()

    def flush(sample):
        if sample is None:
            return
        t, frames = sample
        for k in kinds(t):
            samples[k] += 1
            for f in set(frames):
                cum[k][f] += 1

    sample = None
    head = re.compile(r"(\d+)\.(\d{9}):")
    with open(a.perf_script) as f:
        for line in f:
            if not line.strip():
                flush(sample)
                sample = None
            elif not line[0].isspace():
                m = head.search(line)
                sample = (int(m.group(1)) * 10**9 + int(m.group(2)), []) if m else None
            elif sample is not None:
                parts = line.strip().split(None, 1)
                sym = re.sub(r"\+0x[0-9a-f]+$", "", parts[1]) if len(parts) > 1 else "?"
                sample[1].append(sym)
    flush(sample)

    durations = collections.defaultdict(list)
    for s, e, k in windows:
        durations[k].append((e - s) / 1e6)
    match = re.compile(a.match) if a.match else None
    for k in sorted(durations):
        run = k.split()[0]
        per_job = lambda n: n / a.hz * 1000 / njobs[run]
        d = sorted(durations[k])
        print(f"== {k}: median window {d[len(d) // 2]:.2f} ms, CPU {per_job(samples[k]):.2f} ms a job")
        shown = 0
        for fn, n in cum[k].most_common():
            if match and not match.search(fn):
                continue
            print(f"  {per_job(n):6.2f} ms  {fn[:160]}")
            shown += 1
            if shown >= a.top:
                break


if __name__ == "__main__":
    sys.exit(main())
