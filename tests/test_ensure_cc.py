"""tools/ensure_cc.sh (run by `make test` first; the same Debian helper as ensure_chromium.sh, whose
test covers sudo and a failed install): with a C compiler there, or $CC naming one, it does nothing;
without one and without rights it prints the one command to run. Stub commands on an empty PATH."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "ensure_cc.sh"


def run(folder: Path, *present: str, **env):
    for name in ("id", *present):
        p = folder / name
        p.write_text("#!/bin/bash\n" + ("echo 1000" if name == "id" else "exit 0") + "\n")  # id: not root
        p.chmod(0o755)
    e = {"PATH": str(folder), "HOME": str(folder)} | env
    return subprocess.run(["/bin/bash", str(SCRIPT)], capture_output=True, text=True, env=e, timeout=30)


def test_a_compiler_present_does_nothing(tmp_path):
    for name in ("cc", "gcc"):
        d = tmp_path / name
        d.mkdir()
        r = run(d, name)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    d = tmp_path / "chosen"
    d.mkdir()
    r = run(d, "clang-17", CC="clang-17")
    assert (r.returncode, r.stderr) == (0, "")


def test_no_compiler_no_rights_is_one_line(tmp_path):
    r = run(tmp_path)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == "make test: the compiled-loop tests need a C compiler; install it with: sudo apt-get install -y gcc\n"
