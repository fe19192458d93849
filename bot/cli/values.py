"""Option values converted as typer converts them, without pydantic.

Typer 0.29 converts every option's value with a pydantic TypeAdapter that it builds on the first
parse: its adapter module, pydantic itself and one adapter per option (`--help` included), about a
fifth of `owlia sign send`. `plain_values` gives each plain str, int, bool and Path option a
converter that returns what typer's adapter returns and builds none; a value it does not know to be
plain, and every other type, goes to typer's own converter, so results and error messages are
typer's (tests/bot/test_cli_startup.py compares the two).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer._click.exceptions import BadParameter
from typer._coercion import RuntimeParam, build_runtime_param
from typer._param_types import coerce_cli_path

from bot.cli.plain import plain_int, utf8

PLAIN = (str, int, bool, Path)


class PlainValue(RuntimeParam):
    """One option's converter: what typer's adapter would return, or typer's own converter's answer."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        kind = self.annotation
        path = value if kind is Path and isinstance(value, Path) else None
        if kind is bool and type(value) is bool:
            return value
        if type(value) is str and utf8(value):
            if kind is str:
                return value
            if kind is int and plain_int(value):
                return int(value)
            if kind is Path and value and "\0" not in value:  # os.stat refuses NUL with a ValueError
                path = Path(value)  # what pydantic makes of it
        elif kind is not Path and type(value) is kind:  # a default already of its type: returned unchanged
            return value
        if path is not None:  # typer's own checks (exists, readable, ...)
            try:
                return coerce_cli_path(path, self.parameter_info, path_type=Path, param=param, ctx=ctx)
            except BadParameter:
                pass  # typer's converter words the error: it quotes the value as typed (`dir/`, not `dir`)
        # anything else: typer's own converter, from now on
        param._runtime_param = build_runtime_param(param.type_descriptor)
        return param._runtime_param._coerce_value(value, param=param, ctx=ctx)


def plain_values(command: Any) -> None:
    """Give `command`'s (and its subcommands') plain options, `--help` included, a `PlainValue`."""
    for param in getattr(command, "params", ()):
        _plain(param)
    if hasattr(command, "get_help_option") and "get_help_option" not in vars(command):
        made = command.get_help_option  # click makes `--help` on the first parse, from the context's names

        def get_help_option(ctx: Any) -> Any:
            option = made(ctx)
            if option is not None:
                _plain(option)
            return option

        command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        plain_values(sub)


def _plain(param: Any) -> None:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or getattr(param, "_runtime_param", None) is not None:
        return
    info = descriptor.parameter_info
    if (
        descriptor.annotation in PLAIN
        and param.nargs == 1
        and not param.multiple
        and info.parser is None
        and info.path_type is None
        and not descriptor.is_file
        and not descriptor.is_choice
        and not descriptor.is_ranged
    ):
        param._runtime_param = PlainValue(parameter_info=info, annotation=descriptor.annotation)
