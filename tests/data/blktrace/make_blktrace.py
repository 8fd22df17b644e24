#!/usr/bin/env python3
"""Writes loop0.blktrace.{0,1} (little-endian) and be/loop0.blktrace.{0,1} (the same events,
big-endian): blktrace's per-CPU binary files, built to the blk_io_trace layout of blktrace_api.h
because this machine's kernel refuses blktrace (lockdown: "blktrace: debugfs access is
restricted"). The events follow what blktrace records on a 64 MiB loop device for
`mkfs.ext4 -E discard`, `dd oflag=direct`, a read, `blkdiscard -o 1MiB -l 2MiB` and a flush:
per request Q (queued), G (get request), P/U (plug, unplug), I (insert), D (issue), C (complete),
with back merges (M) of adjacent queued bios, and the notify records that name each process.
Deterministic (seeded). Run from this folder: python3 make_blktrace.py; then
blkparse -i loop0 -o loop0.blkparse.txt (and -D be) writes the text the test compares with."""
import os
import random
import struct

MAGIC = 0x65617400 | 0x07
TC_SHIFT = 16
TC = {name: 1 << (bit + TC_SHIFT) for bit, name in enumerate(
    ["READ", "WRITE", "FLUSH", "SYNC", "QUEUE", "REQUEUE", "ISSUE", "COMPLETE", "FS", "PC",
     "NOTIFY", "AHEAD", "META", "DISCARD", "DRV_DATA", "FUA"])}
TA = {"Q": 1, "M": 2, "G": 4, "D": 7, "C": 8, "P": 9, "U": 10, "I": 12}
ACT_CAT = {"Q": TC["QUEUE"], "M": TC["QUEUE"], "G": TC["QUEUE"], "I": TC["QUEUE"],
           "D": TC["ISSUE"], "C": TC["COMPLETE"], "P": TC["QUEUE"], "U": TC["QUEUE"]}
DEV = 7 << 20  # loop0: major 7, minor 0 (MINORBITS 20)


class Cpu:
    def __init__(self, cpu):
        self.cpu, self.seq, self.records = cpu, 0, []

    def add(self, t, action, pid, sector=0, nbytes=0, pdu=b"", error=0):
        self.seq += 1
        rec = (MAGIC, self.seq, t, sector, nbytes, action, pid, DEV, self.cpu, error, len(pdu))
        self.records.append((rec, pdu))


def main():
    rng = random.Random(43)
    cpus = [Cpu(0), Cpu(1)]
    t = 1_000_000_000  # blktrace stamps are the kernel's clock, not zero-based
    pids = {"mkfs.ext4": 4101, "dd": 4120, "blkdiscard": 4133, "kworker/1:1H": 97}
    for cpu in cpus:
        for name, pid in pids.items():
            cpu.add(t, TC["NOTIFY"], pid, pdu=name.encode() + b"\0")
            t += 1000

    def request(cpu, who, flags, sector, nbytes, bios=1):
        nonlocal t
        pid = pids[who]
        step = nbytes // bios
        cpu.add(t, TA["P"] | ACT_CAT["P"], pid)
        t += rng.randint(200, 900)
        for i in range(bios):
            letter = "Q" if i == 0 else "Q"
            cpu.add(t, TA[letter] | ACT_CAT[letter] | flags, pid, sector + i * step // 512, step)
            t += rng.randint(100, 400)
            if i == 0:
                cpu.add(t, TA["G"] | ACT_CAT["G"] | flags, pid, sector, step)
            else:
                cpu.add(t, TA["M"] | ACT_CAT["M"] | flags, pid, sector + i * step // 512, step)
            t += rng.randint(100, 400)
        cpu.add(t, TA["I"] | ACT_CAT["I"] | flags, pid, sector, nbytes)
        t += rng.randint(100, 300)
        cpu.add(t, TA["U"] | ACT_CAT["U"], pid, pdu=struct.pack(">Q", 1))
        t += rng.randint(100, 300)
        cpu.add(t, TA["D"] | ACT_CAT["D"] | flags, pid, sector, nbytes)
        t += rng.randint(20_000, 90_000)
        # Completions run on the other CPU now and then, as the block layer's softirq does.
        done = cpus[1 - cpu.cpu] if rng.random() < 0.3 else cpu
        done.add(t, TA["C"] | ACT_CAT["C"] | flags, pids["kworker/1:1H"], sector, nbytes)
        t += rng.randint(1000, 5000)

    write, sync, meta = TC["WRITE"], TC["SYNC"], TC["META"]
    # mkfs.ext4 -E discard: the whole 64 MiB in two discards, then its metadata.
    for half in range(2):
        request(cpus[0], "mkfs.ext4", TC["DISCARD"] | write, half * 65536, 32 << 20)
    for i in range(24):
        sector = 2 + i * 2048 if i % 3 else 1026 + i * 16
        request(cpus[i % 2], "mkfs.ext4", write | (meta if i % 4 == 0 else 0), sector, 4096 * rng.choice([1, 2, 8, 16]), bios=rng.choice([1, 2]))
    request(cpus[0], "mkfs.ext4", TC["FLUSH"] | write | sync, 0, 0)
    # dd if=/dev/urandom bs=64k count=4 seek=100 oflag=direct
    for i in range(4):
        request(cpus[1], "dd", write | sync, (100 + i) * 128, 65536, bios=2)
    # a read back, then blkdiscard -o 1MiB -l 2MiB, then a flush
    request(cpus[0], "dd", TC["READ"] | sync, 100 * 128, 65536)
    request(cpus[1], "blkdiscard", TC["DISCARD"] | write, 2048, 2 << 20)
    request(cpus[0], "blkdiscard", TC["FLUSH"] | write | sync, 0, 0)
    for order, folder in (("<", "."), (">", "be")):
        os.makedirs(folder, exist_ok=True)
        for cpu in cpus:
            with open(os.path.join(folder, f"loop0.blktrace.{cpu.cpu}"), "wb") as f:
                for rec, pdu in cpu.records:
                    f.write(struct.pack(order + "IIQQIIIIIHH", *rec) + pdu)


main()
