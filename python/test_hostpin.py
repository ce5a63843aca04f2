"""Tests of python/hostpin.py.  Run twice by `make check` (scripts/pkg-check):
HP_TEST_LOADED=1 under LD_PRELOAD=libhostpin.so with the mlock backend
and a 64 KiB threshold, and HP_TEST_LOADED=0 without hostpin."""
import ctypes
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostpin  # noqa: E402

LOADED = os.environ.get("HP_TEST_LOADED") == "1"
try:
    import numpy
except ImportError:  # pragma: no cover - Debian's python3-numpy is a check dep
    numpy = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

BIG = 8 << 20


@unittest.skipUnless(LOADED, "needs libhostpin.so preloaded")
class Loaded(unittest.TestCase):
    def test_backend_and_stats(self):
        self.assertTrue(hostpin.loaded())
        self.assertIsNone(hostpin.why_not())
        self.assertEqual(hostpin.backend(), "mlock")
        s = hostpin.stats()
        self.assertEqual(set(s), set(hostpin.STATS_FIELDS))

    def check_big(self, obj, addr):
        q = hostpin.query(obj)
        self.assertIsNotNone(q)
        self.assertTrue(q["base"] <= addr < q["base"] + q["len"])
        self.assertGreaterEqual(q["len"], BIG)
        self.assertTrue(q["malloc"] and q["locked"])
        self.assertFalse(q["registered"] or q["pending"])
        self.assertEqual(q["flags"], hostpin.KIND_MALLOC | hostpin.LOCKED)
        self.assertEqual(hostpin.query(addr), q)
        self.assertGreaterEqual(hostpin.stats()["pinned_bytes_now"], BIG)

    @unittest.skipIf(numpy is None, "numpy")
    def test_numpy_array(self):
        a = numpy.ones(BIG // 8)
        self.check_big(a, a.ctypes.data)
        self.check_big(a[1000:], a.ctypes.data + 8000)  # an interior view
        self.assertIsNone(hostpin.query(numpy.ones(16)))

    @unittest.skipIf(torch is None, "torch")
    def test_torch_tensor(self):
        t = torch.ones(BIG // 4)
        self.check_big(t, t.data_ptr())
        self.assertIsNone(hostpin.query(torch.ones(16)))

    def test_ctypes_and_buffers(self):
        buf = ctypes.create_string_buffer(BIG)
        self.check_big(buf, ctypes.addressof(buf))
        b = bytearray(BIG)
        self.assertIsNotNone(hostpin.query(b))
        # (a small bytearray may lie in one of CPython's 1 MiB arenas, an
        # mmap hostpin tracks at this threshold: no assertion on it)

    def test_freed_memory_is_nobodys(self):
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        p = libc.malloc(BIG)
        self.assertIsNotNone(hostpin.query(p))
        libc.free(p)
        q = hostpin.query(p)
        self.assertTrue(q is None or q["base"] != p)

    def test_library_path(self):
        # the library loaded in this process (python/ holds none of its own)
        self.assertTrue(os.path.samefile(hostpin.library_path(),
                                         os.environ["LD_PRELOAD"].split(":")[0]))

    def test_cli(self):
        out = subprocess.run([sys.executable, "-m", "hostpin"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("hostpin backend: mlock", out.stdout)
        self.assertIn("pinned_bytes_now", out.stdout)


@unittest.skipIf(LOADED, "runs without hostpin")
class NotLoaded(unittest.TestCase):
    def test_everything_says_none(self):
        self.assertFalse(hostpin.loaded())
        self.assertIn("not loaded", hostpin.why_not())
        self.assertIsNone(hostpin.stats())
        self.assertIsNone(hostpin.backend())
        self.assertIsNone(hostpin.query(12345))
        if numpy is not None:
            self.assertIsNone(hostpin.query(numpy.ones(BIG // 8)))

    def test_no_library_path(self):
        self.assertIsNone(hostpin.library_path())

    def test_cli_runs_the_launcher(self):
        # python3 -m hostpin CMD...: the launcher on PATH (here a stand-in
        # that prints its arguments and HOSTPIN_LIB); none on PATH: 127
        import tempfile
        here = os.path.dirname(os.path.abspath(__file__))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "hostpin"), "w") as f:
                f.write('#!/bin/sh\necho "launcher $*"\n')
            os.chmod(os.path.join(d, "hostpin"), 0o755)
            out = subprocess.run([sys.executable, "-m", "hostpin", "-b", "mlock", "true"],
                                 capture_output=True, text=True, cwd=here,
                                 env=dict(os.environ, PATH=d))
            self.assertEqual((out.returncode, out.stdout), (0, "launcher -b mlock true\n"))
            out = subprocess.run([sys.executable, "-m", "hostpin", "true"], capture_output=True,
                                 text=True, cwd=here, env=dict(os.environ, PATH="/nonexistent"))
            self.assertEqual(out.returncode, 127)
            self.assertIn("no launcher", out.stderr)

    def test_cli_says_why(self):
        out = subprocess.run([sys.executable, "-m", "hostpin"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
        self.assertEqual(out.returncode, 1)
        self.assertIn("hostpin: libhostpin.so is not loaded in this process", out.stderr)


class Addresses(unittest.TestCase):
    def test_what_has_an_address(self):
        self.assertEqual(hostpin.address_of(4096), 4096)
        c = ctypes.c_int(3)
        self.assertEqual(hostpin.address_of(c), ctypes.addressof(c))
        for bad in ("text", b"bytes", 1.5, True):
            with self.assertRaises(TypeError):
                hostpin.address_of(bad)


if __name__ == "__main__":
    unittest.main()
