import subprocess
import sys

from attnscope.cli import main


def test_example_prints_true_values(capsys):
    assert main(["example", "three-tokens"]) == 0
    out = capsys.readouterr().out
    assert "[0.3057, 0.0743, 0.6200]" in out
    assert "[1.9238, 0.6823]" in out


def test_console_script_entry_point_runs():
    r = subprocess.run([sys.executable, "-m", "attnscope", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("attnscope ")
