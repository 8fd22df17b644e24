#!/usr/bin/env python3
"""Hostile and honest NBD clients against `trimlab serve`: issue 26's serve reproducers, timed.

Usage: hostile.py TRIMLAB_BINARY SCENARIO...   (release builds; docs/serve.md has the figures)
  s1       16 clients declare 32 MiB WRITEs and send 100 bytes; an honest 32 MiB write + read
  s2[:CAP] 16 clients x four unread 32 MiB READs; an honest 32 MiB READ (gives up after CAP s)
  s3[:CAP] a client reads its 32 MiB reply at 64 KiB/s: how long until the server cuts it
  s4       64 idle handshakes; how long until a new client is served
  s5       prlimit --nofile=1024, 1100 clients (CMAX=N sets --connections-max, default 400)
  s6       --pace real, 9 clients flood CACHE without reading: the server's RSS
  s7       1 GiB of 1 MiB WRITEs over 4 connections, 8 in flight each, three rounds
"""
import os, socket, struct, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="trimlab-hostile-")
CFG64 = os.path.join(WORK, "c64.toml")
CFG1G = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../examples/serve.toml")
open(CFG64, "w").write('[device]\nlogical_bytes = "64MiB"\nchannels = 2\nchips_per_channel = 1\n'
                       'dies_per_chip = 1\nplanes_per_die = 1\npages_per_block = 64\n')


def start(cfg, *extra, limit=None):
    cmd = [BIN, "serve", cfg, "--listen", "127.0.0.1:0", "--quiet", "--out", os.path.join(WORK, "out"), *extra]
    if limit:
        cmd = ["prlimit", f"--nofile={limit}", *cmd]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    addr = line.split("listening on ")[1].split(" ")[0]
    host, port = addr.rsplit(":", 1)
    return p, (host, int(port))


def stop(p):
    if p.poll() is None:
        p.send_signal(2)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def recv_exact(s, n):
    b = bytearray()
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("closed")
        b += c
    return bytes(b)


def go(addr, timeout=30):
    s = socket.create_connection(addr, timeout=timeout)
    recv_exact(s, 18)
    s.sendall(struct.pack(">I", 3))
    s.sendall(struct.pack(">QII", 0x49484156454F5054, 7, 6) + b"\0" * 6)
    while True:
        h = recv_exact(s, 20)
        ty, ln = struct.unpack(">II", h[12:20])
        recv_exact(s, ln)
        if ty == 1:
            return s
        if ty & (1 << 31):
            raise RuntimeError("refused")


def req(cmd, offset, length, handle=1):
    return struct.pack(">IHHQQI", 0x25609513, 0, cmd, handle, offset, length)


def reply(s, data_len=0):
    h = recv_exact(s, 16)
    errno = struct.unpack(">I", h[4:8])[0]
    if data_len and errno == 0:
        return errno, recv_exact(s, data_len)
    return errno, b""


def rss_mib(p):
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


def s1_partial_writes():
    p, addr = start(CFG64)
    hostile = []
    for i in range(16):
        s = go(addr)
        s.sendall(req(1, 0, 32 << 20) + b"\xab" * 100)
        hostile.append(s)
    time.sleep(0.5)
    h = go(addr)
    data = os.urandom(32 << 20)
    t0 = time.time()
    try:
        h.sendall(req(1, 32 << 20, 32 << 20) + data)
        e, _ = reply(h)
        t_w = time.time() - t0
        h.sendall(req(0, 32 << 20, 32 << 20))
        e2, back = reply(h, 32 << 20)
        print(f"S1 16 partial 32 MiB WRITEs: honest 32 MiB write {t_w*1000:.0f} ms (errno {e}), "
              f"write+read back {(time.time()-t0)*1000:.0f} ms, data ok {back == data}, server RSS {rss_mib(p):.0f} MiB")
    except (socket.timeout, OSError, EOFError) as ex:
        print(f"S1 16 partial 32 MiB WRITEs: honest client NOT served after {time.time()-t0:.1f} s ({ex})")
    for s in hostile:
        s.close()
    stop(p)


def s2_unread_reads(cap):
    p, addr = start(CFG64)
    hostile = []
    for i in range(16):
        s = go(addr)
        s.sendall(b"".join(req(0, 0, 32 << 20, h) for h in range(4)))
        hostile.append(s)
    time.sleep(1.0)
    h = go(addr, timeout=cap)
    t0 = time.time()
    try:
        h.sendall(req(0, 0, 32 << 20))
        e, _ = reply(h, 32 << 20)
        print(f"S2 16 clients x 4 unread 32 MiB READs: honest 32 MiB READ answered after {time.time()-t0:.2f} s (errno {e}), server RSS {rss_mib(p):.0f} MiB")
    except (socket.timeout, OSError, EOFError) as ex:
        print(f"S2 16 clients x 4 unread 32 MiB READs: honest 32 MiB READ NOT answered after {time.time()-t0:.1f} s ({ex})")
    for s in hostile:
        s.close()
    stop(p)


def s3_slow_reader(cap):
    p, addr = start(CFG64)
    s = go(addr)
    s.settimeout(5)
    s.sendall(req(0, 0, 32 << 20))
    t0 = time.time()
    got = 0
    while time.time() - t0 < cap:
        time.sleep(1.0)
        try:
            c = s.recv(64 << 10)
        except socket.timeout:
            continue
        except OSError:
            break
        if not c:
            break
        got += len(c)
    held = time.time() - t0
    print(f"S3 reply read 64 KiB/s: connection {'cut' if held < cap else 'still held'} after {held:.1f} s ({got >> 10} KiB read)")
    stop(p)


def s4_idle_handshakes():
    p, addr = start(CFG64)
    idle = [socket.create_connection(addr) for _ in range(64)]
    time.sleep(0.3)
    t0 = time.time()
    tries = 0
    while True:
        tries += 1
        try:
            s = go(addr, timeout=5)
            s.sendall(req(0, 0, 4096))
            reply(s, 4096)
            break
        except (OSError, EOFError):
            time.sleep(0.2)
            if time.time() - t0 > 45:
                break
    print(f"S4 64 idle handshakes: honest client served after {time.time()-t0:.2f} s ({tries} tries)")
    for s in idle:
        s.close()
    stop(p)


def s5_descriptors():
    p, addr = start(CFG64, "--connections-max", os.environ.get("CMAX", "400"), limit=1024)
    served, refused, failures, how = [], 0, 0, {}
    for i in range(1100):
        t0 = time.time()
        try:
            served.append(go(addr, timeout=10))
            failures = 0
        except (OSError, EOFError, RuntimeError) as ex:
            refused += 1
            failures += 1
            key = f"{type(ex).__name__} after {time.time() - t0:.0f} s"
            how[key] = how.get(key, 0) + 1
            if failures >= 5 and time.time() - t0 > 5:
                print(f"S5 nofile 1024, --connections-max 400: client {i + 1}: 5 in a row failed ({how}); "
                      f"{len(served)} served; server alive {p.poll() is None}")
                for s in served:
                    s.close()
                stop(p)
                return
        if p.poll() is not None:
            print(f"S5 nofile 1024, --connections-max 400: server EXITED at client {i + 1} ({len(served)} served)")
            for s in served:
                s.close()
            return
    for s in served[:50]:
        s.close()
    served = served[50:]
    time.sleep(0.3)
    try:
        s = go(addr, timeout=10)
        s.sendall(req(0, 0, 4096))
        ok = reply(s, 4096)[0] == 0
    except (OSError, EOFError, RuntimeError):
        ok = False
    print(f"S5 nofile 1024, --connections-max 400: 1100 clients: {len(served) + 50} served, {refused} refused {how}, "
          f"server alive {p.poll() is None}, new client served after 50 left: {ok}")
    for c in served:
        c.close()
    stop(p)


def s6_paced_flood():
    p, addr = start(CFG64, "--pace", "real")
    base = rss_mib(p)
    clients = [go(addr) for _ in range(9)]
    burst = b"".join(struct.pack(">IHHQQI", 0x25609513, 0, 5, i, 0, 4096) for i in range(4096))

    def flood(s):
        s.settimeout(None)
        try:
            while True:
                s.sendall(burst)
        except OSError:
            pass

    ts = [threading.Thread(target=flood, args=(c,), daemon=True) for c in clients]
    for t in ts:
        t.start()
    series = []
    for _ in range(15):
        time.sleep(2)
        series.append(round(rss_mib(p)))
    print("S6 RSS every 2 s:", series)
    peak = rss_mib(p)
    for c in clients:
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        c.close()
    time.sleep(3)
    print(f"S6 pace real, 9 clients flooding CACHE, unread: server RSS {base:.0f} -> {peak:.0f} MiB "
          f"(budget 512 MiB), {rss_mib(p):.0f} MiB 3 s after they left")
    stop(p)


def s7_throughput():
    p, addr = start(CFG1G)
    total = 1 << 30
    per = total // 4
    data = os.urandom(1 << 20)

    def writer(k):
        s = go(addr)
        depth, sent, acked = 8, 0, 0
        off0 = k * per
        while acked < per >> 20:
            while sent < per >> 20 and sent - acked < depth:
                s.sendall(req(1, off0 + (sent << 20), 1 << 20, sent) + data)
                sent += 1
            reply(s)
            acked += 1
        s.close()

    for rnd in range(3):
        t0 = time.time()
        ts = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        dt = time.time() - t0
        print(f"S7 1 GiB of 1 MiB writes, 4 connections x depth 8, round {rnd + 1}: {dt:.2f} s ({1024 / dt:.0f} MiB/s)")
    stop(p)


for name in sys.argv[2:]:
    if name == "s1":
        s1_partial_writes()
    elif name.startswith("s2"):
        s2_unread_reads(float(name[3:] or 120))
    elif name.startswith("s3"):
        s3_slow_reader(float(name[3:] or 90))
    elif name == "s4":
        s4_idle_handshakes()
    elif name == "s5":
        s5_descriptors()
    elif name == "s6":
        s6_paced_flood()
    elif name == "s7":
        s7_throughput()
    sys.stdout.flush()
