"""bot.cli.say prints `error: ...` for the command lines that go around typer (`owlia start`, `owlia sign
send`) byte for byte as the typer commands' `fail` does (click's styled echo): on a terminal, off one,
and not at all when the process has no stderr."""

from __future__ import annotations

import io
import os
import pty
import select
import sys

import pytest
import typer
from hypothesis import given, settings, strategies as st

from bot.cli import say
from policies.kernel.cli import fail

# What an error message may hold: anything printable a path, a config error or an address could carry.
MESSAGES = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=80)


def _printed_by_both(message: str, stream_for) -> tuple[bytes, bytes]:
    outputs = []
    for print_it in (lambda: say.error(message), lambda: _typer_fail(message)):
        stream, read = stream_for()
        saved, sys.stderr = sys.stderr, stream
        try:
            print_it()
        finally:
            sys.stderr = saved
        outputs.append(read())
    return outputs[0], outputs[1]


def _typer_fail(message: str) -> None:
    with pytest.raises(typer.Exit) as done:
        fail(message)
    assert done.value.exit_code == 1


def _pipe_like():
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)

    def read() -> bytes:
        return stream.buffer.getvalue()

    return stream, read


def _terminal():
    controller, terminal = pty.openpty()
    stream = open(terminal, "w", encoding="utf-8", closefd=True)

    def read() -> bytes:
        stream.flush()
        data = b""
        while not data.endswith(b"\n") and select.select([controller], [], [], 5)[0]:
            data += os.read(controller, 1 << 16)  # the terminal may hand the line over in pieces
        stream.close()
        os.close(controller)
        return data

    return stream, read


@settings(max_examples=60, deadline=None)
@given(MESSAGES)
def test_off_a_terminal_the_bytes_are_fails(message: str) -> None:
    ours, typers = _printed_by_both(message, _pipe_like)
    assert ours == typers == f"error: {message}\n".encode()


@settings(max_examples=30, deadline=None)
@given(MESSAGES)
def test_on_a_terminal_the_bytes_are_fails_in_red(message: str) -> None:
    ours, typers = _printed_by_both(message, _terminal)
    assert ours == typers and ours.startswith(b"\x1b[31merror: ") and ours.endswith(b"\x1b[0m\r\n")


def test_without_stderr_nothing_is_printed_and_nothing_fails(monkeypatch) -> None:
    monkeypatch.setattr(sys, "stderr", None)  # as Python sets it when started with descriptor 2 closed
    say.error("no stream")
    say.say("no stream", say.YELLOW)
    _typer_fail("no stream")  # click's echo writes nothing either
