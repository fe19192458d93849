"""bot/cli/values.py converts str, int, bool and Path options without typer's pydantic adapters: every
value must come out exactly as typer's own converter makes it, and every refused value with typer's
own error. Compared on typer's real option objects, for any text a command line can carry."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import pytest
import typer
from hypothesis import given, settings, strategies as st
from typer._click.exceptions import BadParameter
from typer._coercion import build_runtime_param

from bot.cli.lazy import build
from bot.cli.values import PlainValue


def _command(
    name: str = typer.Option("x", "--name"),
    count: int = typer.Option(7, "--count"),
    where: Optional[Path] = typer.Option(None, "--where"),
    must: Path = typer.Option(Path(__file__), "--must", exists=True, dir_okay=False),
    flag: bool = typer.Option(False, "--flag"),
) -> None:
    """A command with one option of each plain kind."""


COMMAND = build("probe", _command)
CTX = COMMAND.make_context("probe", [])
PARAMS = {p.name: p for p in COMMAND.params}


def both(param_name: str, value: object) -> tuple[object, object]:
    """(what PlainValue makes of `value`, what typer's own converter makes of it): a value or the error."""
    param = PARAMS[param_name]
    descriptor = param.type_descriptor
    plain = PlainValue(parameter_info=descriptor.parameter_info, annotation=descriptor.annotation)
    own = build_runtime_param(param.type_descriptor)
    results = []
    for converter in (plain, own):
        saved = param._runtime_param
        try:
            results.append(converter.coerce(value, param=param, ctx=CTX))
        except BadParameter as exc:
            results.append(("error", exc.format_message()))
        finally:
            param._runtime_param = saved  # PlainValue hands an odd value to typer's converter from then on
    return results[0], results[1]


def test_every_plain_option_gets_the_plain_converter() -> None:
    assert all(isinstance(param._runtime_param, PlainValue) for param in PARAMS.values())


# What argv can hold: any text, including lone surrogates (undecodable bytes), NUL-free by the OS
ARGV_TEXT = st.text(st.characters(blacklist_characters="\x00"), max_size=40)
NUMBERISH = st.from_regex(r"\A[ +\-_0-9.eE]{0,25}\Z") | st.integers(-(10**30), 10**30).map(str)


@settings(max_examples=300, deadline=None)
@given(ARGV_TEXT | NUMBERISH)
def test_str_and_int_options_convert_as_typer_does(text: str) -> None:
    for name in ("name", "count"):
        plain, own = both(name, text)
        assert plain == own and type(plain) is type(own), (name, text)


@settings(max_examples=200, deadline=None)
@given(ARGV_TEXT)
def test_path_options_convert_and_refuse_as_typer_does(text: str) -> None:
    for name in ("where", "must"):
        plain, own = both(name, text)
        assert plain == own and type(plain) is type(own), (name, text)


EDGES = [
    None,
    True,
    False,
    7,
    2**70,
    "",
    "-",
    ".",
    "/",
    "0",
    "+5",
    "-0",
    "007",
    " 5",
    "1_0",
    "5.0",
    "9" * 18,
    "9" * 19,
    "\udcff",
    "a\x00b",
    Path("."),
    Path("/nonexistent-dir/x"),
]


@pytest.mark.parametrize("value", EDGES)
def test_edge_values_convert_as_typer_does(value: object) -> None:
    for name in PARAMS:
        if name == "flag" and not isinstance(value, (bool, type(None))):
            continue  # a flag gets True/False (or None) from the parser, never text
        plain, own = both(name, value)
        assert plain == own and type(plain) is type(own), (name, value)


def test_an_unreadable_existing_path_gets_typers_error(tmp_path) -> None:
    secret = tmp_path / "f"
    secret.write_text("x")
    secret.chmod(0)
    try:
        plain, own = both("must", str(secret))
        if os.access(secret, os.R_OK):  # root reads anything: then both accept it
            assert plain == own == secret
        else:
            assert plain == own and plain[0] == "error"
    finally:
        secret.chmod(0o600)
    plain, own = both("must", str(tmp_path))
    assert plain == own == ("error", f"Invalid value for '--must': file {str(tmp_path)!r} is a directory.")
