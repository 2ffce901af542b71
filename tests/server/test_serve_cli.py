"""``attnscope serve`` argument errors are one line and exit 2 (the server itself runs in
tests/browser, started as a real uvicorn process)."""

import pytest

from attnscope.cli import main


@pytest.mark.parametrize("argv, msg", [
    (["serve", "--port", "99999"], "--port must be from 0 to 65535, got 99999"),
    (["serve", "--max-chars", "0"], "--max-chars must be from 1 to 1000000, got 0"),
    (["serve", "--held-mb", "0"], "--held-mb must be from 1 to 1048576, got 0"),
])
def test_bad_arguments(capsys, argv, msg):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_port_in_use_is_one_sentence_before_the_model_loads(capsys, monkeypatch):
    import socket

    import attnscope.models
    monkeypatch.setattr(attnscope.models, "load", lambda *a, **k: pytest.fail("loaded the model"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    out, err = capsys.readouterr()
    assert err == f"attnscope serve: error: port {port} is in use; choose another with --port\n"
    assert "serving" not in out


@pytest.mark.parametrize("host, msg", [("no-such-host.invalid", "--host 'no-such-host.invalid' is not an address"),
                                       ("10.255.255.1", "--host 10.255.255.1 is not an address of this machine")])
def test_bad_host(capsys, host, msg):
    assert main(["serve", "--host", host, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def _serve_until_serving(*args):
    """Run `attnscope serve ARGS --port 0` until it says it serves; return (stdout lines, stderr)."""
    import os
    import re
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-m", "attnscope", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if "http://" in line:  # "serving http://…", in any language
                break
        url = re.search(r"http://\S+/", lines[-1]).group(0)
        import urllib.request
        with urllib.request.urlopen(url + "healthz", timeout=10) as r:  # it serves once it says so
            assert r.status == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    return lines, err


def test_serving_is_said_once_it_serves_and_loopback_is_quiet():
    lines, err = _serve_until_serving()
    assert lines[0] == "attnscope: loading the model…"
    assert lines[-1].startswith("attnscope: serving http://127.0.0.1:") and lines[-1].endswith("press Ctrl+C to stop")
    assert len(lines) == 2 and "warning" not in err and "Traceback" not in err


def test_a_non_loopback_host_is_warned_about():
    lines, err = _serve_until_serving("--host", "0.0.0.0")
    assert ("attnscope serve: warning: listening on 0.0.0.0 opens the API to other machines on the network, "
            "without authentication; use --host 127.0.0.1 to keep it local") in err


def test_what_serve_says_is_in_its_language():
    """serve --lang zh started the page and the API in Chinese but said "loading the model…",
    "serving …" and the warning about a public address in English."""
    lines, err = _serve_until_serving("--lang", "zh", "--host", "0.0.0.0")
    assert lines[0] == "attnscope：正在加载模型…" and len(lines) == 2
    assert lines[-1].startswith("attnscope：正在服务 http://0.0.0.0:") and lines[-1].endswith("docs）；按 Ctrl+C 停止")
    assert ("attnscope serve：警告：在 0.0.0.0 上监听会把 API 开放给网络上的其他机器，且没有身份验证；"
            "用 --host 127.0.0.1 只在本机提供") in err


@pytest.mark.parametrize("command", ["serve", "view"])
def test_help_is_plain_text(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "``" not in out and f"attnscope {command}:" in out
    import re
    options = re.findall(r"^\s+(--[a-z-]+)", out, re.M)
    helpless = [o for o in options if re.search(rf"^\s+{o}(?: [A-Z_]+)?\s*$", out, re.M)
                and not re.search(rf"^\s+{o}(?: [A-Z_]+)?\n\s{{20,}}\S", out, re.M)]
    assert helpless == [], helpless  # every option says what it does
