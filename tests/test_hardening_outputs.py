"""Output paths (issue 14 item 6): missing parent folders of ``--out`` and ``--pcap`` are
created on both clocks; any other I/O problem -- a file where the folder should be, a
directory where the capture should be, a read-only file system, permission denied, a
path under /proc, a full disk -- is one stderr line naming the path and the operating
system's reason (``os.strerror``), exit status 1, no traceback, no ``.partial`` or
temporary file left, and the earlier results byte for byte as they were.

Every case drives the real command (``python -m ibemu run``, or :func:`ibemu.cli.main`
in-process where a system call is replaced).  Read-only and full disks use a small
tmpfs mounted for the test (root with CAP_SYS_ADMIN, as in CI); where mounting is not
allowed the read-only case falls back to ``chattr +i`` and otherwise skips saying why.
Permission denied: root bypasses mode bits, so as root the command runs without
CAP_DAC_OVERRIDE (``setpriv``) against a 0555 folder."""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ibemu.atomic
from ibemu.capture.erf import read_erf_pcap
from ibemu.cli import main

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
RUN = [sys.executable, "-m", "ibemu", "run", "quickstart", "--no-plots", "-q"]
PORT_BASE = 45000 + (os.getpid() % 1000) * 8      # free_port_block moves on from a busy block


def run(*args: str | Path, duration: str = "100us", clock: str = "virtual",
        prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = (prefix or []) + RUN + ["--duration", duration, "--clock", clock] + [str(a) for a in args]
    if clock == "wall":
        cmd += ["--workers", "2", "--dilation", "200", "--port-base", str(PORT_BASE)]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)


def assert_one_line(r: subprocess.CompletedProcess[str] | tuple[int, str], path: str | Path, err: int) -> str:
    """Exit status 1, one stderr line naming *path* and the system's text for *err*."""
    code, stderr = (r.returncode, r.stderr) if isinstance(r, subprocess.CompletedProcess) else r
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert code == 1, stderr
    assert str(path) in lines[0] and os.strerror(err) in lines[0], lines[0]
    return lines[0]


def digest(folder: Path) -> dict[str, str]:
    """Name -> SHA-256 of every file under *folder* (the earlier results)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(*folders: Path) -> list[Path]:
    """Temporary files of a write that did not finish: ``.partial`` captures, ``.*.tmp``."""
    return [p for f in folders for p in f.rglob("*") if p.name.endswith((".partial", ".tmp"))]


# ------------------------------------------------------------------ missing parents

@pytest.mark.parametrize("clock", ["virtual", "wall"])
def test_missing_parent_folders_are_created(tmp_path, clock):
    out, pcap = tmp_path / "a" / "b" / "run", tmp_path / "x" / "y" / "cap.pcap"
    r = run("--out", out, "--pcap", pcap, clock=clock, duration="200us")
    assert r.returncode == 0, r.stderr
    assert (out / "results.json").is_file() and (out / "flows.csv").is_file()
    assert sum(1 for _ in read_erf_pcap(pcap)) > 50          # a whole, readable capture
    assert not leftovers(tmp_path)


# ------------------------------------------------------------------ something in the way

@pytest.mark.parametrize("clock", ["virtual", "wall"])
def test_out_that_is_a_file(tmp_path, clock):
    f = tmp_path / "results"
    f.write_text("not a folder\n")
    r = run("--out", f, clock=clock)
    assert_one_line(r, f, errno.ENOTDIR)
    assert f.read_text() == "not a folder\n"


def test_out_below_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = run("--out", f / "run")
    assert_one_line(r, f / "run", errno.ENOTDIR)


@pytest.mark.parametrize("clock", ["virtual", "wall"])
def test_pcap_that_is_a_directory_keeps_earlier_results(tmp_path, clock):
    out, d = tmp_path / "run", tmp_path / "cap.pcap"
    assert run("--out", out).returncode == 0
    before = digest(out)
    d.mkdir()
    r = run("--out", out, "--pcap", d, clock=clock, duration="200us")
    assert_one_line(r, d, errno.EISDIR)
    assert digest(out) == before and list(d.iterdir()) == []
    assert not leftovers(tmp_path)


def test_a_directory_where_a_result_file_goes(tmp_path):
    """results.json is a directory: nothing of the new run is committed (the batch is
    checked before the first rename), no temporary file stays."""
    out = tmp_path / "run"
    assert run("--out", out).returncode == 0
    (out / "flows.csv").unlink()
    (out / "flows.csv").mkdir()
    before = digest(out)
    r = run("--out", out, duration="200us")
    assert_one_line(r, out / "flows.csv", errno.EISDIR)
    assert digest(out) == before and not leftovers(tmp_path)


# ------------------------------------------------------------------ /proc

def test_out_under_proc():
    assert Path("/proc/version").is_file(), "needs Linux /proc"
    r = run("--out", "/proc/ibemu-no-such-run")
    assert_one_line(r, "/proc/ibemu-no-such-run", errno.ENOENT)
    r = run("--out", "/proc/version")
    assert_one_line(r, "/proc/version", errno.ENOTDIR)


def test_pcap_under_proc(tmp_path):
    r = run("--out", tmp_path / "run", "--pcap", "/proc/version/cap.pcap")
    assert_one_line(r, "/proc/version/cap.pcap", errno.ENOTDIR)
    assert not leftovers(tmp_path)


# ------------------------------------------------------------------ read-only, permission denied

def _mount_tmpfs(where: Path, size: str) -> str | None:
    """Mount a tmpfs of *size* at *where*; None, or why it could not be."""
    if shutil.which("mount") is None:
        return "no mount command"
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", str(where)],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip() or "mount failed")


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def tmpfs(tmp_path):
    """A 1 MiB tmpfs at tmp_path/fs, or a skip saying why it cannot be mounted."""
    where = tmp_path / "fs"
    where.mkdir()
    why = _mount_tmpfs(where, "1m")
    if why:
        pytest.skip("cannot mount a tmpfs here (%s); the in-process ENOSPC test still runs" % why)
    yield where
    _umount(where)


def test_read_only_out_keeps_earlier_results(tmp_path):
    """A read-only file system (a tmpfs remounted ro: EROFS, which root cannot bypass),
    else an immutable folder (``chattr +i``: EPERM, also binding on root)."""
    where = tmp_path / "fs"
    where.mkdir()
    mounted = _mount_tmpfs(where, "4m") is None
    out = where / "run"
    try:
        assert run("--out", out).returncode == 0
        before = digest(out)
        if mounted:
            r = subprocess.run(["mount", "-o", "remount,ro", str(where)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            expected = errno.EROFS
        else:
            if shutil.which("chattr") is None:
                pytest.skip("neither a tmpfs mount nor chattr is available for a read-only folder")
            r = subprocess.run(["chattr", "+i", str(out)], capture_output=True, text=True)
            if r.returncode:
                pytest.skip("neither a tmpfs mount nor chattr +i is allowed here: %s" % r.stderr.strip())
            expected = errno.EPERM
        try:
            r = run("--out", out, duration="200us")
            assert_one_line(r, out, expected)
            r = run("--out", tmp_path / "other", "--pcap", out / "cap.pcap")
            assert_one_line(r, out / "cap.pcap", expected)
            assert digest(out) == before
        finally:
            if not mounted:
                subprocess.run(["chattr", "-i", str(out)], capture_output=True)
    finally:
        if mounted:
            _umount(where)


def test_permission_denied(tmp_path):
    """A folder of mode 0555.  Root's CAP_DAC_OVERRIDE ignores mode bits, so as root the
    command runs without it (``setpriv`` drops it, and CAP_DAC_READ_SEARCH, from the
    bounding set; still uid 0, so it can read its own Python under /root)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    prefix = None
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root and no setpriv to drop CAP_DAC_OVERRIDE")
        prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]
    try:
        r = run("--out", locked / "run", prefix=prefix)
        assert_one_line(r, locked / "run", errno.EACCES)
        r = run("--out", locked, prefix=prefix)
        assert_one_line(r, locked, errno.EACCES)
        r = run("--out", tmp_path / "run", "--pcap", locked / "cap.pcap", prefix=prefix)
        assert_one_line(r, locked / "cap.pcap", errno.EACCES)
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


# ------------------------------------------------------------------ disk full

def _fill(where: Path, leave: int) -> None:
    """Fill the file system of *where* up to *leave* bytes free."""
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    with open(where / "filler", "wb") as fh:
        fh.write(b"\0" * max(free - leave, 0))


@pytest.mark.parametrize("what", ["out", "pcap"])
def test_full_disk_on_a_tmpfs(tmpfs, what):
    """ENOSPC for real: the results (or the capture) on a full tmpfs.  The run fails with
    one line, the earlier results and capture stay byte for byte, nothing temporary stays."""
    out, pcap = tmpfs / "run", tmpfs / "cap.pcap"
    assert run("--out", out, "--pcap", pcap).returncode == 0
    before, cap_before = digest(out), pcap.read_bytes()
    _fill(tmpfs, 4096 if what == "out" else 0)
    if what == "out":
        r = run("--out", out, duration="300us")
    else:
        r = run("--out", out, "--pcap", pcap, duration="300us")
    line = assert_one_line(r, tmpfs, errno.ENOSPC)
    assert (str(pcap) in line) == (what == "pcap")
    assert digest(out) == before and pcap.read_bytes() == cap_before
    assert not leftovers(tmpfs)


def test_full_disk_on_a_tmpfs_wall_clock(tmpfs, tmp_path):
    """The wall clock: the merged capture does not fit; the earlier results (in another
    folder) and the earlier capture stay as they were."""
    out, pcap = tmp_path / "run", tmpfs / "cap.pcap"
    r = run("--out", out, "--pcap", pcap, clock="wall")
    assert r.returncode == 0, r.stderr
    before, cap_before = digest(out), pcap.read_bytes()
    _fill(tmpfs, 0)
    r = run("--out", out, "--pcap", pcap, clock="wall", duration="200us")
    assert_one_line(r, pcap, errno.ENOSPC)
    assert {k: v for k, v in digest(out).items() if not k.startswith("parts")} == \
        {k: v for k, v in before.items() if not k.startswith("parts")}
    assert pcap.read_bytes() == cap_before and not leftovers(tmpfs)


def _enospc_on_call(monkeypatch, n: int) -> list[int]:
    """From the *n*-th ``os.fsync`` (counting from 1) on, fail with ENOSPC, as a full disk
    does when the data reach it; returns the call counter."""
    real, calls = os.fsync, [0]

    def fsync(fd: int) -> None:
        calls[0] += 1
        if calls[0] >= n:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)
    monkeypatch.setattr(ibemu.atomic.os, "fsync", fsync)
    return calls


@pytest.mark.parametrize("nth", [1, 2, 4])
def test_full_disk_in_process(tmp_path, monkeypatch, capsys, nth):
    """ENOSPC simulated at the n-th fsync (the capture's, then results.json's, then a CSV's):
    whichever file it hits, none of the new run's files is committed -- the earlier
    results.json stays even when its own new copy was whole (n = 4)."""
    out, pcap = tmp_path / "run", tmp_path / "cap.pcap"
    args = ["run", "quickstart", "--no-plots", "-q", "--out", str(out), "--pcap", str(pcap)]
    assert main(args + ["--duration", "100us"]) == 0
    before, cap_before = digest(out), pcap.read_bytes()
    capsys.readouterr()
    calls = _enospc_on_call(monkeypatch, nth)
    code = main(args + ["--duration", "200us"])
    err = capsys.readouterr().err
    assert calls[0] >= nth
    line = assert_one_line((code, err), tmp_path, errno.ENOSPC)
    assert (str(pcap) in line) == (nth == 1)
    assert digest(out) == before and pcap.read_bytes() == cap_before
    assert not leftovers(tmp_path)


def test_batch_commits_all_or_nothing(tmp_path):
    """:func:`ibemu.atomic.atomic_batch`: an error after two whole files leaves both
    targets as they were; without an error all are renamed at the block's end."""
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    b.write_text("old b")
    with pytest.raises(RuntimeError):
        with ibemu.atomic.atomic_batch():
            ibemu.atomic.atomic_write_text(a, "new a")
            ibemu.atomic.atomic_write_text(b, "new b")
            assert a.read_text() == "old a"          # held back until the end
            raise RuntimeError("boom")
    assert (a.read_text(), b.read_text()) == ("old a", "old b") and not leftovers(tmp_path)
    with ibemu.atomic.atomic_batch():
        ibemu.atomic.atomic_write_text(a, "new a")
        ibemu.atomic.atomic_write_text(b, "new b")
    assert (a.read_text(), b.read_text()) == ("new a", "new b") and not leftovers(tmp_path)
