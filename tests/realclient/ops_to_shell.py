#!/usr/bin/env python3
"""Translates a trimlab file-operation script (.ops, the syntax of docs/config.md's script
section) into the bash that does the same on a real mounted file system, so that one .ops file is
the single source of truth: the model runs it, the kernel runs its translation
(tests/realclient/record-workload.sh).

Usage: ops_to_shell.py [--fs ext4|xfs|btrfs] [--discard POLICY] SCRIPT.ops > workload.sh

The printed bash expects MNT (the mount point), DEV (the block device) and the function `mark`
(tests/realclient/lib.sh) for each `phase` line. The translator keeps its own copy of the file
tree so that brace expansion, globs (natural order: f2 before f10), `rm every=K start=I` and the
errors are decided here, from the script alone, exactly as the model decides them; the bash then
names every path explicitly (the shell's glob order is the locale's, not natural order).

Directives (comments to the model): `#kernel: BASH` runs BASH on the kernel only, and the
operations between `#kernel-skip` and `#kernel-end` are run by the model only: together they let
a script record a real program (cp -r, tar x, sqlite3) beside the model's equivalent of it.

Refused: `rm random=N` and `size=MIN..MAX` (the model draws them from its seeded random stream,
which the shell cannot reproduce), and discard policies without a kernel mount option (lazy,
selective, fstrim:PERIOD, ...). Errors name the line and the operation and exit with status 2."""
import re
import shlex
import sys

# The kernel mount option of each model discard policy (docs/config.md's [host] discard), per
# file system. btrfs needs an explicit `nodiscard`: since 6.2 it mounts discard=async by default
# on a device that supports discard.
MOUNT_OPTIONS = {
    "ext4": {"nodiscard": "nodiscard", "discard": "discard", "discard-batch": "discard",
             "ext4-discard": "discard"},
    "xfs": {"nodiscard": "nodiscard", "discard": "discard", "discard-batch": "discard"},
    "btrfs": {"nodiscard": "nodiscard", "discard": "discard=sync", "async": "discard=async"},
}
SIZE_UNITS = {"B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20, "G": 1 << 30,
              "GiB": 1 << 30, "T": 1 << 40, "TiB": 1 << 40, "KB": 10**3, "MB": 10**6, "GB": 10**9,
              "TB": 10**12}
DURATION_UNITS_MS = {"ms": 1, "s": 1000, "min": 60000, "h": 3600000}
# Buffered writes without bs= are one write in the model; dd gets a bounded buffer instead (the
# page cache writes back the same dirty pages whatever the write() sizes were, and with delayed
# allocation, which the model has too (crates/fs/src/fs/delalloc.rs; tests/write_size.rs), the
# blocks are allocated then: placement and TRIMs do not depend on the write size, in the kernel
# or in the model, unless an fsync or a 30 s flusher pass comes between the writes).
DD_BS_MAX = 1 << 20
RANDOM_REFUSAL = ("the shell cannot reproduce the model's seeded random stream; "
                  "name the paths, use every=K start=I, or give one size")


class ScriptError(Exception):
    pass


def parse_number(text, units, what):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", text)
    if not m:
        raise ScriptError(f'{what} "{text}" is not a number with a unit')
    number, unit = m.groups()
    if not unit:
        if float(number) == 0:
            return 0
        raise ScriptError(f'{what} "{text}" needs a unit (one of {", ".join(units)})')
    if unit not in units:
        raise ScriptError(f'{what} "{text}": unknown unit "{unit}" (one of {", ".join(units)})')
    value = float(number) * units[unit]
    if value != int(value):
        raise ScriptError(f'{what} "{text}" is not a whole number of bytes')
    return int(value)


def parse_size(text, what="size"):
    return parse_number(text, SIZE_UNITS, what)


def natural_key(name):
    parts = re.split(r"(\d+)", name)
    return [int(p) if i % 2 else p for i, p in enumerate(parts)], name


def brace_expand(word):
    """bash brace expansion: the first top-level {..} group, then the rest (leftmost slowest)."""
    depth, start = 0, -1
    for i, c in enumerate(word):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                alts = brace_alternatives(word[start + 1:i])
                if alts is None:
                    continue
                head, tail = word[:start], word[i + 1:]
                return [w for a in alts for w in brace_expand(head + a + tail)]
    return [word]


def brace_alternatives(body):
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?", body)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        width = max(len(m.group(1)), len(m.group(2)))
        padded = re.match(r"-?0\d", m.group(1)) or re.match(r"-?0\d", m.group(2))
        values = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [str(v).zfill(width) if padded else str(v) for v in values]
    m = re.fullmatch(r"([a-zA-Z])\.\.([a-zA-Z])(?:\.\.(-?\d+))?", body)
    if m:
        a, b = ord(m.group(1)), ord(m.group(2))
        step = abs(int(m.group(3) or 1)) or 1
        values = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [chr(v) for v in values]
    alts, depth, cur = [], 0, ""
    for c in body:
        if c == "," and depth == 0:
            alts.append(cur)
            cur = ""
            continue
        depth += (c == "{") - (c == "}")
        cur += c
    if not alts:
        return None  # "{x}" stays literal, as in bash
    return alts + [cur]


def glob_regex(component):
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c)
                              for c in component) + r"\Z")


class Tree:
    """The file tree the script builds: a dict per directory, None for a file."""

    def __init__(self):
        self.root = {}

    @staticmethod
    def split(path):
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ScriptError(f'path "{path}": ".." is not accepted')
        return parts

    def lookup(self, parts):
        node = self.root
        for p in parts:
            if not isinstance(node, dict) or p not in node:
                return False
            node = node[p]
        return node

    def parent(self, path):
        parts = self.split(path)
        if not parts:
            raise ScriptError(f'"{path}" is the mount point itself')
        node = self.lookup(parts[:-1])
        if node is False:
            raise ScriptError(f'"{"/".join(parts[:-1])}" (parent of "{path}") does not exist')
        if not isinstance(node, dict):
            raise ScriptError(f'"{"/".join(parts[:-1])}" (parent of "{path}") is not a directory')
        return node, parts[-1]

    def glob(self, pattern):
        paths = [[]]
        for comp in self.split(pattern):
            if "*" not in comp and "?" not in comp:
                paths = [p + [comp] for p in paths]
                continue
            rx, nxt = glob_regex(comp), []
            for p in paths:
                node = self.lookup(p)
                if isinstance(node, dict):
                    names = sorted((n for n in node if rx.match(n)), key=natural_key)
                    nxt += [p + [n] for n in names]
            paths = [p for p in nxt]
        if not paths:
            raise ScriptError(f'"{pattern}" matches nothing')
        return ["/".join(p) for p in paths]

    def expand(self, word):
        out = []
        for w in brace_expand(word):
            out += self.glob(w) if ("*" in w or "?" in w) else ["/".join(self.split(w))]
        return out


class Translator:
    def __init__(self, fs, discard):
        self.fs, self.tree, self.out = fs, Tree(), []
        self.policy = discard
        self.mount_options(discard)
        self.mounted = True

    def emit(self, line):
        self.out.append(line)

    def q(self, path):
        return '"$MNT"/' + shlex.quote(path) if path else '"$MNT"'

    def mount_options(self, policy):
        opts = MOUNT_OPTIONS[self.fs]
        if policy not in opts:
            raise ScriptError(f'discard policy "{policy}" has no {self.fs} mount option '
                              f'(accepted: {", ".join(opts)}); the others are model-only')
        return opts[policy]

    def need_mounted(self, op):
        if not self.mounted:
            raise ScriptError(f"the file system is unmounted (only mount and sleep now)")

    def existing(self, path, kind=None):
        node = self.tree.lookup(self.tree.split(path))
        if node is False:
            raise ScriptError(f'"{path}" does not exist')
        if kind == "file" and isinstance(node, dict):
            raise ScriptError(f'"{path}" is a directory')
        return node

    def translate(self, words):
        op, args = words[0], words[1:]
        if op not in OPERATIONS:
            raise ScriptError(f'unknown operation "{op}" (accepted: {", ".join(OPERATIONS)})')
        if op not in ("mount", "sleep", "phase"):
            self.need_mounted(op)
        getattr(self, "op_" + op.replace("-", "_"))(*split_args(op, args))

    def op_phase(self, flags, kv, paths):
        if len(paths) != 1 or flags or kv or not re.fullmatch(r"[A-Za-z0-9._-]+", paths[0]):
            raise ScriptError("phase takes one NAME of letters, digits, '.', '_' and '-'")
        self.emit(f"mark {paths[0]}")

    def op_mkdir(self, flags, kv, paths):
        check_args(flags, kv, {"-p"}, set())
        expanded = [p for w in paths for p in self.tree.expand(w)]
        for path in expanded:
            parts, node = self.tree.split(path), self.tree.root
            for i, comp in enumerate(parts):
                last = i == len(parts) - 1
                if comp not in node:
                    if not last and "-p" not in flags:
                        raise ScriptError(f'"{"/".join(parts[:i + 1])}" does not exist (mkdir -p)')
                    node[comp] = {}
                elif not isinstance(node[comp], dict):
                    raise ScriptError(f'"{"/".join(parts[:i + 1])}" is a file')
                elif last and "-p" not in flags:
                    raise ScriptError(f'"{path}" already exists')
                node = node[comp]
        self.emit_chunked(f"mkdir {'-p ' if '-p' in flags else ''}", expanded)

    def emit_chunked(self, prefix, paths, per_line=64):
        for i in range(0, len(paths), per_line):
            self.emit(prefix + " ".join(self.q(p) for p in paths[i:i + per_line]))

    def new_files(self, words, op):
        paths = [p for w in words for p in self.tree.expand(w)]
        for path in paths:
            parent, name = self.tree.parent(path)
            if name in parent:
                raise ScriptError(f'"{path}" already exists')
            parent[name] = None
        return paths

    def op_create(self, flags, kv, paths):
        check_args(flags, kv, {"fsync"}, {"size", "bs"}, required={"size"})
        if ".." in kv["size"]:
            raise ScriptError(f"size=MIN..MAX: {RANDOM_REFUSAL}")
        size = parse_size(kv["size"], "size")
        bs = parse_size(kv["bs"], "bs") if "bs" in kv else None
        for path in self.new_files(paths, "create"):
            if bs:
                self.emit(f"wr {self.q(path)} 0 {size} {bs}")
            else:
                self.emit(f"head -c {size} /dev/urandom > {self.q(path)}")
            if "fsync" in flags:
                self.emit(f"sync {self.q(path)}")

    def op_touch(self, flags, kv, paths):
        check_args(flags, kv, set(), set())
        expanded = [p for w in paths for p in self.tree.expand(w)]
        for path in expanded:
            parent, name = self.tree.parent(path)
            parent.setdefault(name, None)
        self.emit_chunked("touch ", expanded)

    def one_file(self, op, paths):
        expanded = [p for w in paths for p in self.tree.expand(w)]
        if len(expanded) != 1:
            raise ScriptError(f"takes one PATH (got {len(expanded)})")
        self.existing(expanded[0], "file")
        return expanded[0]

    def op_write(self, flags, kv, paths):
        check_args(flags, kv, set(), {"offset", "bytes", "bs"}, required={"bytes"})
        path = self.one_file("write", paths)
        n = parse_size(kv["bytes"], "bytes")
        off = parse_size(kv.get("offset", "0"), "offset")
        bs = parse_size(kv["bs"], "bs") if "bs" in kv else min(n, DD_BS_MAX) or 1
        self.emit(f"wr {self.q(path)} {off} {n} {bs}")

    def op_append(self, flags, kv, paths):
        check_args(flags, kv, set(), {"bytes", "bs"}, required={"bytes"})
        n = parse_size(kv["bytes"], "bytes")
        bs = parse_size(kv["bs"], "bs") if "bs" in kv else min(n, DD_BS_MAX) or 1
        for path in [p for w in paths for p in self.tree.expand(w)]:
            self.existing(path, "file")
            self.emit(f"ap {self.q(path)} {n} {bs}")

    def op_fsync(self, flags, kv, paths, data_only=False):
        check_args(flags, kv, set(), set())
        expanded = [p for w in paths for p in self.tree.expand(w)]
        if not expanded:
            raise ScriptError("needs at least one PATH")
        for path in expanded:
            self.existing(path)
        self.emit_chunked("sync -d " if data_only else "sync ", expanded)

    def op_fdatasync(self, flags, kv, paths):
        self.op_fsync(flags, kv, paths, data_only=True)

    def op_sync(self, flags, kv, paths):
        check_args(flags, kv, set(), set())
        if paths:
            raise ScriptError("sync takes no PATH (fsync PATH syncs one file)")
        self.emit('sync -f "$MNT"')

    def op_rm(self, flags, kv, paths):
        check_args(flags, kv, {"-r", "-f"}, {"every", "start", "random"})
        if "random" in kv:
            raise ScriptError(f"random=N: {RANDOM_REFUSAL}")
        if "every" in kv:
            if len(paths) != 1:
                raise ScriptError("rm every=K [start=I] takes one PATTERN")
            k, start = parse_count(kv, "every", 1), parse_count(kv, "start", 0, "0")
            expanded = self.tree.expand(paths[0])[start::k]
        elif "start" in kv:
            raise ScriptError("rm start=I needs every=K")
        else:
            expanded = [p for w in paths for p in self.tree.expand(w)]
        kept = [p for p in expanded if self.remove(p, "-r" in flags, "-f" in flags)]
        self.emit_chunked("rm " + "".join(f + " " for f in sorted(flags)), kept)

    def remove(self, path, recursive, force):
        parts = self.tree.split(path)
        parent = self.tree.lookup(parts[:-1]) if parts else False
        if not parts:
            raise ScriptError("rm of the mount point itself")
        if not isinstance(parent, dict) or parts[-1] not in parent:
            if force:
                return False
            raise ScriptError(f'"{path}" does not exist')
        if isinstance(parent[parts[-1]], dict) and not recursive:
            raise ScriptError(f'"{path}" is a directory (rm -r)')
        del parent[parts[-1]]
        return True

    def op_rmdir(self, flags, kv, paths):
        check_args(flags, kv, set(), set())
        expanded = [p for w in paths for p in self.tree.expand(w)]
        for path in expanded:
            node = self.existing(path)
            if not isinstance(node, dict):
                raise ScriptError(f'"{path}" is not a directory')
            if node:
                raise ScriptError(f'"{path}" is not empty')
            parent, name = self.tree.parent(path)
            del parent[name]
        self.emit_chunked("rmdir ", expanded)

    def op_mv(self, flags, kv, paths):
        check_args(flags, kv, set(), set())
        if len(paths) != 2:
            raise ScriptError("mv takes FROM TO")
        src, dst = ("/".join(self.tree.split(p)) for p in paths)
        node = self.existing(src)
        if dst == src or dst.startswith(src + "/"):
            if isinstance(node, dict):
                raise ScriptError(f'"{src}" into itself ("{dst}") would make a cycle')
        dparent, dname = self.tree.parent(dst)
        if dname in dparent:
            target = dparent[dname]
            if isinstance(target, dict) and not isinstance(node, dict):
                raise ScriptError(f'"{dst}" is a directory, "{src}" a file')
            if isinstance(node, dict) and not isinstance(target, dict):
                raise ScriptError(f'"{dst}" is a file, "{src}" a directory')
            if isinstance(target, dict) and target:
                raise ScriptError(f'"{dst}" is a directory that is not empty')
        sparent, sname = self.tree.parent(src)
        del sparent[sname]
        dparent[dname] = node
        # -T: rename(2) semantics, never "into" an existing directory.
        self.emit(f"mv -T {self.q(src)} {self.q(dst)}")

    def op_truncate(self, flags, kv, paths):
        check_args(flags, kv, set(), {"size"}, required={"size"})
        path = self.one_file("truncate", paths)
        self.emit(f"truncate -s {parse_size(kv['size'])} {self.q(path)}")

    def op_fallocate(self, flags, kv, paths):
        check_args(flags, kv, set(), {"offset", "bytes"}, required={"bytes"})
        path = self.one_file("fallocate", paths)
        off, n = parse_size(kv.get("offset", "0"), "offset"), parse_size(kv["bytes"], "bytes")
        self.emit(f"fallocate -o {off} -l {n} {self.q(path)}")

    def op_punch_hole(self, flags, kv, paths):
        check_args(flags, kv, set(), {"offset", "bytes"},
                   required={"offset", "bytes"})
        path = self.one_file("punch-hole", paths)
        off, n = parse_size(kv["offset"], "offset"), parse_size(kv["bytes"], "bytes")
        self.emit(f"fallocate -p -o {off} -l {n} {self.q(path)}")

    def op_sleep(self, flags, kv, paths):
        if len(paths) != 1 or flags or kv:
            raise ScriptError("sleep takes one DURATION (e.g. 200s, 500ms, 2min)")
        ms = parse_number(paths[0], DURATION_UNITS_MS, "duration")
        self.emit(f"sleep {ms // 1000}.{ms % 1000:03d}")

    def op_fstrim(self, flags, kv, paths):
        check_args(flags, kv, set(), {"minlen", "offset", "length"})
        if paths:
            raise ScriptError("fstrim takes no PATH (it trims the whole file system)")
        opts = "".join(f" -{k[0]} {parse_size(kv[k], k)}" for k in ("minlen", "offset", "length")
                       if k in kv)
        # The fstrim -v line goes to the log: split_recording.py keeps it in phases.json.
        self.emit(f'echo "fstrim{opts}: $(fstrim -v{opts} "$MNT")"')

    def op_umount(self, flags, kv, paths):
        check_args(flags, kv, set(), set())
        if paths:
            raise ScriptError("umount takes no PATH")
        self.mounted = False
        self.emit('umount "$MNT"')

    def op_mount(self, flags, kv, paths, remount=False):
        check_args(flags, kv, set(), {"discard"})
        if paths:
            raise ScriptError("takes no PATH, only discard=POLICY")
        if self.mounted and not remount:
            raise ScriptError("already mounted (umount first, or remount)")
        # Without discard= the policy of the last mount stays (the config's at first).
        self.policy = kv.get("discard", self.policy)
        opts = self.mount_options(self.policy)
        if remount:
            self.emit('umount "$MNT"')
        self.mounted = True
        self.emit(f'mount -o {opts} "$DEV" "$MNT"')

    def op_remount(self, flags, kv, paths):
        self.op_mount(flags, kv, paths, remount=True)


OPERATIONS = ["phase", "mkdir", "create", "touch", "write", "append", "fsync", "fdatasync", "sync",
              "rm", "rmdir", "mv", "truncate", "fallocate", "punch-hole", "sleep", "fstrim",
              "umount", "mount", "remount"]


def split_args(op, args):
    flags, kv, paths = set(), {}, []
    for a in args:
        if re.fullmatch(r"-[a-zA-Z]+", a):
            flags |= {"-" + c for c in a[1:]}
        elif "=" in a and re.fullmatch(r"[a-z]+", a.split("=", 1)[0]):
            key, value = a.split("=", 1)
            if key in kv:
                raise ScriptError(f"{key}= given twice")
            kv[key] = value
        elif a == "fsync" and op == "create":
            flags.add("fsync")
        else:
            paths.append(a)
    return flags, kv, paths


def check_args(flags, kv, flags_ok, keys_ok, required=frozenset()):
    for f in sorted(flags - flags_ok):
        raise ScriptError(f"unknown flag {f} (accepted: {', '.join(sorted(flags_ok)) or 'none'})")
    for k in sorted(set(kv) - keys_ok):
        raise ScriptError(f"unknown key {k}= (accepted: {', '.join(sorted(keys_ok)) or 'none'})")
    for k in sorted(set(required) - set(kv)):
        raise ScriptError(f"{k}= is required")


def parse_count(kv, key, least, default=None):
    text = kv.get(key, default)
    if text is None or not re.fullmatch(r"\d+", text) or int(text) < least:
        raise ScriptError(f'{key}="{text}" must be a whole number >= {least}')
    return int(text)


PREAMBLE = """\
# Generated by tests/realclient/ops_to_shell.py from {script} (fs {fs}, discard {discard}).
# Needs MNT (the mount point), DEV (the block device) and mark (tests/realclient/lib.sh).
set -e
: "${{MNT:?}}" "${{DEV:?}}"
# wr FILE OFFSET BYTES BS: buffered writes of BS from OFFSET, the rest of the file kept.
wr() {{ dd if=/dev/urandom of="$1" bs="$4" seek="$2" count="$3" oflag=seek_bytes \\
  iflag=count_bytes,fullblock conv=notrunc status=none; }}
# ap FILE BYTES BS: buffered appends of BS.
ap() {{ dd if=/dev/urandom of="$1" bs="$3" count="$2" oflag=append \\
  iflag=count_bytes,fullblock conv=notrunc status=none; }}
"""


def main(argv):
    fs, discard, script = "ext4", "discard", None
    it = iter(argv)
    for a in it:
        if a == "--fs":
            fs = next(it, "")
        elif a == "--discard":
            discard = next(it, "")
        elif script is None and not a.startswith("-"):
            script = a
        else:
            sys.exit(f"usage: ops_to_shell.py [--fs ext4|xfs|btrfs] [--discard POLICY] SCRIPT.ops (got {a})")
    if script is None or fs not in MOUNT_OPTIONS:
        sys.exit("usage: ops_to_shell.py [--fs ext4|xfs|btrfs] [--discard POLICY] SCRIPT.ops")
    try:
        t = Translator(fs, discard)
    except ScriptError as e:
        sys.exit(f"ops_to_shell.py: --discard: {e}")
    skipping = False
    for number, raw in enumerate(open(script), 1):
        # Directives for a program the script language has no operation for (cp -r, tar x,
        # sqlite3): `#kernel: BASH` runs BASH on the kernel only; the ops between
        # `#kernel-skip` and `#kernel-end` are the model's equivalent of it, kept in the file
        # tree here but not run by the kernel.
        directive = raw.strip()
        if directive.startswith("#kernel:"):
            t.emit(directive[len("#kernel:"):].strip())
            continue
        if directive in ("#kernel-skip", "#kernel-end"):
            if skipping == (directive == "#kernel-skip"):
                print(f"{script} line {number}: {directive} out of order", file=sys.stderr)
                return 2
            skipping = directive == "#kernel-skip"
            continue
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        t.emit(f"# line {number}: {' '.join(words)}")
        mark = len(t.out)
        try:
            t.translate(words)
        except ScriptError as e:
            print(f"{script} line {number}: {words[0]}: {e}", file=sys.stderr)
            return 2
        if skipping:
            del t.out[mark - 1:]
    if skipping:
        print(f"{script}: #kernel-skip without #kernel-end", file=sys.stderr)
        return 2
    sys.stdout.write(PREAMBLE.format(script=script, fs=fs, discard=discard))
    sys.stdout.write("\n".join(t.out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
