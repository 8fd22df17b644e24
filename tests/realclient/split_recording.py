#!/usr/bin/env python3
"""Keeps the TRIM lines of a `trimlab serve --record` trace, split into the phases the
server's metrics.json names (by simulated start/end time), as test data for the
discard-pattern test. Usage: split_recording.py RECORDING METRICS_JSON OUT_TRIMS OUT_PHASES SCRIPT_LOG

OUT_TRIMS: '# phase NAME start_us end_us' headers, then 'at_us offset_bytes length_bytes' per
TRIM range the model received (WRITE_ZEROES arrive as TRIMs of whole granules too; the phase
counters in OUT_PHASES tell the two apart).
OUT_PHASES: per phase, the NBD counters (trim / write_zeroes commands and bytes, writes,
flushes) and the model's TRIM commands; plus the script's fstrim -v lines."""
import json
import sys

rec, metrics, out_trims, out_phases, script_log = sys.argv[1:6]
m = json.load(open(metrics))
phases = m["stats"]["phases"]
lines = []
for line in open(rec):
    f = line.split()
    if len(f) == 5 and f[2] == "trim":
        lines.append((int(f[0]), int(f[3]), int(f[4])))
with open(out_trims, "w") as o:
    o.write("# TRIM ranges the model received, by phase (tests/realclient/split_recording.py)\n")
    for p in phases:
        s, e = p["sim_start_ns"] // 1000, p["sim_end_ns"] // 1000
        o.write(f"# phase {p['name']} {s} {e}\n")
        for (t, off, n) in lines:
            if s <= t < e or (p is phases[-1] and t >= s):
                o.write(f"{t} {off} {n}\n")
keep = ["trim_commands", "trim_bytes", "write_zeroes_commands", "write_zeroes_bytes",
        "write_commands", "write_bytes", "flush_commands"]
out = {"phases": [], "fstrim": []}
for p in phases:
    d = {"name": p["name"], "sim_start_ns": p["sim_start_ns"], "sim_end_ns": p["sim_end_ns"]}
    d.update({k: p["nbd"][k] for k in keep})
    d["model_trim_commands"] = p["trim_commands"]
    d["model_trim_pages_requested"] = p["trim_pages_requested"]
    out["phases"].append(d)
for line in open(script_log):
    if line.startswith("fstrim"):
        out["fstrim"].append(line.strip())
json.dump(out, open(out_phases, "w"), indent=1, sort_keys=True)
open(out_phases, "a").write("\n")
