#!/usr/bin/env python3
"""Summarises a trace-discard-pattern.sh run. Usage: discard-trace-summary.py TRACE FS.trims

Prints btrfs' transaction commits, block-group events (created, put on the unused list, skipped
by the cleaner), when the discard work item ran, and per burst of discards (FALLOCATE punch
holes of the loop device's backing file, gaps over 1 s start a new burst): the FUSE round
trip (loop -> nbdfuse -> NBD -> trimlab serve and back), the time from the FUSE reply to the
discard's completion, and from a completion to the next discard's issue (the kernel's part);
then the arrival gaps `trimlab serve` recorded for the same phase. For XFS: per CPU, the
inodes queued for inactivation (xfs_inodegc_queue) between log forces, each inodegc worker
run (how it was started: at once by the 33rd+ queued inode, or by its delayed-work timer) with
its inode count, each sync's log force, and the rm phase's discard bursts (TRIMs, bytes)."""
import re
import statistics as st
import sys

trace, trims = sys.argv[1:3]
pat = re.compile(r"\s(\d+\.\d+): (\w+): (.*)$")
cpu_pat = re.compile(r"\[(\d+)\]")
# Every event once: (time, cpu, event, the rest, the raw line).
xfs_lines = []
for line in open(trace):
    if line.startswith("#"):
        continue
    m = pat.search(line)
    if m:
        c = cpu_pat.search(line)
        xfs_lines.append((float(m.group(1)), int(c.group(1)) if c else -1, m.group(2), m.group(3), line))
events = [(t, e, rest) for t, _, e, rest, _ in xfs_lines]
t0 = events[0][0] if events else 0.0
for t, e, rest in events:
    if e.startswith("btrfs_") or (e == "workqueue_execute_start" and "btrfs_discard_workfn" in rest):
        print(f"{t - t0:12.6f} {e} {rest[:110]}")
sends, ends, issues, completes = {}, {}, [], []
for t, e, rest in events:
    if e == "fuse_request_send" and "FALLOCATE" in rest:
        sends[int(re.search(r"req (\d+)", rest).group(1))] = t
    elif e == "fuse_request_end":
        r = int(re.search(r"req (\d+)", rest).group(1))
        if r in sends:
            ends[r] = t
    elif e == "block_rq_issue":
        issues.append(t)
    elif e == "block_rq_complete":
        completes.append(t)
reqs = sorted((sends[r], ends[r]) for r in ends)
bursts, cur = [], []
for s, e in reqs:
    if cur and s - cur[-1][0] > 1.0:
        bursts.append(cur)
        cur = []
    cur.append((s, e))
if cur:
    bursts.append(cur)
us = lambda x: x * 1e6
for b in bursts:
    rtt = [us(e - s) for s, e in b]
    reply = [us(min((c for c in completes if c >= e), default=e) - e) for _, e in b]
    nxt = []
    for _, e in b[:-1]:
        c = min((c for c in completes if c >= e), default=None)
        i = min((i for i in issues if c is not None and i > c), default=None)
        if c is not None and i is not None:
            nxt.append(us(i - c))
    line = f"burst at {b[0][0] - t0:.3f} s: {len(b)} discards; FUSE round trip us first {rtt[0]:.0f} " \
           f"median {st.median(rtt):.0f} range {min(rtt):.0f}-{max(rtt):.0f}; reply to completion median {st.median(reply):.0f}"
    if nxt:
        line += f"; completion to next issue {min(nxt):.0f}-{max(nxt):.0f}"
    print(line)
phase, arrivals = None, {}
for line in open(trims):
    if line.startswith("# phase"):
        phase = line.split()[2]
        arrivals[phase] = []
    elif not line.startswith("#"):
        arrivals[phase].append(int(line.split()[0]))
for p, v in arrivals.items():
    if len(v) > 2:
        g = [b - a for a, b in zip(v, v[1:])]
        print(f"serve arrivals {p}: {len(v)} TRIMs in {(v[-1] - v[0]) / 1000:.2f} ms, gaps us first {g[0]} median {st.median(g)} range {min(g)}-{max(g)}")

# XFS: deferred inode inactivation against the syncs' log forces (fs/xfs/xfs_icache.c).
if any(e == "xfs_inodegc_queue" for _, _, e, _, _ in xfs_lines):
    queued = {}
    run = None
    runs = []
    for t, cpu, e, rest, line in xfs_lines:
        if e == "xfs_inodegc_queue":
            queued[cpu] = queued.get(cpu, 0) + 1
        elif e == "workqueue_queue_work" and "xfs_inodegc_worker" in rest:
            how = "timer" if "<idle>" in line or ".s" in line.split("]")[1][:8] else "at once"
            run = [t, cpu, how, 0]
            runs.append(run)
        elif e == "xfs_inodegc_worker":
            queued[cpu] = 0
        elif e == "xfs_inode_inactivating" and run is not None:
            run[3] += 1
        elif e == "xfs_log_force" and "xfs_fs_sync_fs" in rest:
            print(f"{t - t0:12.6f} sync's log force on cpu {cpu}")
        if e == "workqueue_queue_work" and "xfs_inodegc_worker" in rest:
            print(f"{t - t0:12.6f} inodegc worker queued on cpu {cpu} ({run[2]})")
    for t, cpu, how, n in runs:
        print(f"{t - t0:12.6f} inodegc worker on cpu {cpu} ({how}) inactivated {n} inodes")
    rm = []
    phase = None
    for line in open(trims):
        if line.startswith("# phase"):
            phase = line.split()[2]
        elif phase == "rm" and not line.startswith("#"):
            f = line.split()
            rm.append((int(f[0]), int(f[2])))
    out = []
    for at, b in rm:
        if out and at - out[-1][0] <= 1_000_000:
            out[-1][0] = at
            out[-1][1] += 1
            out[-1][2] += b
        else:
            out.append([at, 1, b])
    print("rm bursts (TRIMs, bytes): " + ", ".join(f"{n} / {b}" for _, n, b in out))
