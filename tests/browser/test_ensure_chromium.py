"""tools/ensure_chromium.sh (run by `make test` first): with Chromium there it does nothing;
without it, root or password-less sudo installs Debian's package, anyone else gets one line with
the command to run. Driven with stub commands on an otherwise empty PATH."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "ensure_chromium.sh"


def stub(folder: Path, name: str, body: str) -> None:
    p = folder / name
    p.write_text("#!/bin/bash\n" + body + "\n")
    p.chmod(0o755)


def run(folder: Path, **env):
    e = {"PATH": str(folder), "HOME": str(folder)} | env
    return subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, env=e, timeout=30)


@pytest.fixture
def bin_dir(tmp_path):
    d = tmp_path / "bin"
    d.mkdir()
    stub(d, "id", "echo 1000")  # not root
    return d


def test_chromium_present_does_nothing(bin_dir):
    stub(bin_dir, "chromium", "exit 0")
    r = run(bin_dir)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_no_chromium_no_rights_is_one_line(bin_dir):
    r = run(bin_dir)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "make test: the browser tests need Chromium; install it with: sudo apt-get install -y chromium\n"


def test_sudo_without_password_installs_debians_package(bin_dir):
    log = bin_dir / "log"
    stub(bin_dir, "sudo", f'[ "$1" = -n ] && shift; echo "sudo $*" >> {log}; "$@"')
    stub(bin_dir, "true", "exit 0")
    # apt-get "installs" chromium by putting a stub on PATH
    stub(bin_dir, "apt-get", f'echo "apt-get $*" >> {log}; [ "$1" = install ] && printf "#!/bin/bash\\n" > {bin_dir}/chromium '
                             f'&& /bin/chmod +x {bin_dir}/chromium; exit 0')
    r = run(bin_dir)
    assert r.returncode == 0, r.stderr
    assert "installing Debian's chromium" in r.stderr and r.stderr.count("\n") == 1
    assert "sudo apt-get install -y -q chromium" in log.read_text()


def test_failed_install_says_what_to_run(bin_dir):
    stub(bin_dir, "id", "echo 0")  # root
    stub(bin_dir, "apt-get", "exit 100")
    r = run(bin_dir)
    assert r.returncode == 1
    assert r.stderr.splitlines()[-1] == "make test: apt-get could not install chromium; run: sudo apt-get install -y chromium"


def test_a_chosen_path_counts(bin_dir, tmp_path):
    exe = tmp_path / "my-chromium"
    stub(tmp_path, "my-chromium", "exit 0")
    r = run(bin_dir, ATTNSCOPE_CHROMIUM=str(exe))
    assert r.returncode == 0 and r.stderr == ""
    assert os.access(exe, os.X_OK)
