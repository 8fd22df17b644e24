#!/usr/bin/env python3
"""Checks ops_to_shell.py's expansion order, rm every=K, its refusals and its error lines.
Run: python3 tests/realclient/test_ops_to_shell.py (no root, no kernel needed)."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ops_to_shell  # noqa: E402


def translate(text, fs="ext4", discard="discard"):
    with tempfile.NamedTemporaryFile("w", suffix=".ops", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "ops_to_shell.py"), "--fs", fs,
                            "--discard", discard, f.name], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr.replace(f.name, "S")
    finally:
        os.unlink(f.name)


def commands(out):
    return [line for line in out.splitlines() if line and not line.startswith(("#", " "))][4:]


class Expansion(unittest.TestCase):
    def test_braces_are_bash_order_with_steps_and_padding(self):
        self.assertEqual(ops_to_shell.brace_expand("d{0..1}/f{0..4..2}"),
                         ["d0/f0", "d0/f2", "d0/f4", "d1/f0", "d1/f2", "d1/f4"])
        self.assertEqual(ops_to_shell.brace_expand("{a,b{1,2}}x"), ["ax", "b1x", "b2x"])
        self.assertEqual(ops_to_shell.brace_expand("f{08..10}"), ["f08", "f09", "f10"])
        self.assertEqual(ops_to_shell.brace_expand("f{3..1}{x}"), ["f3{x}", "f2{x}", "f1{x}"])

    def test_globs_are_natural_order_and_every_k_picks_from_them(self):
        rc, out, _ = translate("touch f{1..12}\nrm every=5 start=1 f*\n")
        self.assertEqual(rc, 0)
        self.assertEqual(commands(out)[-1], 'rm "$MNT"/f2 "$MNT"/f7 "$MNT"/f12')

    def test_mount_options_follow_the_policy_and_fs(self):
        rc, out, _ = translate("remount discard=nodiscard\numount\nmount\n", "btrfs", "async")
        self.assertEqual(rc, 0)
        self.assertEqual(commands(out), ['umount "$MNT"', 'mount -o nodiscard "$DEV" "$MNT"',
                                         'umount "$MNT"', 'mount -o nodiscard "$DEV" "$MNT"'])


class Errors(unittest.TestCase):
    def check(self, text, message):
        rc, out, err = translate(text)
        self.assertEqual(rc, 2, out)
        self.assertEqual(err.strip(), message)

    def test_bad_scripts_name_their_line(self):
        self.check("mkdir a\nrm a/x\n", 'S line 2: rm: "a/x" does not exist')
        self.check("touch a\ncreate b size=10\n", 'S line 2: create: size "10" needs a unit '
                   '(one of B, K, KiB, M, MiB, G, GiB, T, TiB, KB, MB, GB, TB)')
        self.check("mkdir a\nmv a a/b\n", 'S line 2: mv: "a" into itself ("a/b") would make a cycle')
        self.check("umount\ntouch a\n", "S line 2: touch: the file system is unmounted "
                   "(only mount and sleep now)")
        self.check("rm f*\n", 'S line 1: rm: "f*" matches nothing')

    def test_random_is_refused(self):
        rc, _, err = translate("touch a b\nrm random=1 *\n")
        self.assertEqual(rc, 2)
        self.assertIn("line 2: rm: random=N: the shell cannot reproduce", err)
        rc, _, err = translate("create a size=4KiB..8KiB\n")
        self.assertIn("line 1: create: size=MIN..MAX: the shell cannot reproduce", err)


if __name__ == "__main__":
    unittest.main()
