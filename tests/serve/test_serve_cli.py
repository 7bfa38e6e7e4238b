"""``layoutproof serve``'s arguments: refused with exit status 2 and a message, never a
traceback; --help lists the options."""

from __future__ import annotations

import pytest

from layoutproof.serve import serve_main


@pytest.mark.parametrize(
    "argv, text",
    [
        (["--port", "70000"], "--port"),
        (["--port", "-1"], "--port"),
        (["--workers", "0"], "--workers"),
        (["--budget", "0"], "--budget"),
        (["--proof-budget", "1e9"], "--budget"),
    ],
)
def test_bad_arguments(argv, text, capsys):
    assert serve_main(argv) == 2
    assert text in capsys.readouterr().err


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        serve_main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--host" in out and "--port" in out and "127.0.0.1" in out
