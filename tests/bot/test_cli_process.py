"""bot/cli/process.py: a one-shot command ends with `os._exit` after its output and atexit handlers,
with its own exit code; anything else ends the ordinary way. Each case runs in its own process."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(body: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent("""
        import atexit, gc, sys, threading, time
        from bot.cli import process
        atexit.register(lambda: print("atexit ran", file=sys.stderr))
        class Probe:
            def __del__(self):
                print("teardown ran", file=sys.stderr)  # module teardown reaches it; os._exit does not
        probe = Probe()
    """) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_a_one_shot_command_skips_teardown_but_keeps_output_atexit_and_exit_code() -> None:
    done = run("""
        def command():
            process.loading(one_shot=True)
            assert not gc.isenabled()
            sys.stdout.write("x" * 100000)  # more than any buffer: all of it must arrive
            sys.exit(3)
        process.run(command)
    """)
    assert done.returncode == 3 and done.stdout == "x" * 100000
    assert "atexit ran" in done.stderr and "teardown ran" not in done.stderr


def test_help_or_a_usage_error_exits_fast_with_its_code() -> None:
    done = run("""
        process.run(lambda: sys.exit(2))
    """)
    assert done.returncode == 2 and "atexit ran" in done.stderr and "teardown ran" not in done.stderr


def test_any_other_command_exits_the_ordinary_way() -> None:
    done = run("""
        def command():
            process.loading(one_shot=False)
            assert gc.isenabled()
            sys.exit(4)
        process.run(command)
    """)
    assert done.returncode == 4 and "teardown ran" in done.stderr


def test_a_message_exit_or_a_live_thread_exits_the_ordinary_way() -> None:
    message = run("""
        process.run(lambda: sys.exit("error: worded"))
    """)
    assert message.returncode == 1 and "error: worded" in message.stderr and "teardown ran" in message.stderr
    thread = run("""
        def command():
            threading.Thread(target=lambda: (time.sleep(0.3), print("thread finished"))).start()
            sys.exit(0)
        process.run(command)
    """)
    assert thread.returncode == 0 and "thread finished" in thread.stdout and "teardown ran" in thread.stderr


def test_outside_the_owlia_process_nothing_changes() -> None:
    """A test's CliRunner calls the app, not `process.run`: loading a one-shot command leaves GC on."""
    done = run("""
        process.loading(one_shot=True)
        assert gc.isenabled()
        sys.exit(5)
    """)
    assert done.returncode == 5 and "teardown ran" in done.stderr
