"""A command group that imports a command's module when that command runs, not when `owlia` starts.

`owlia --help` lists every command from a summary kept next to its loader, so it imports none of
them; `owlia sign send` imports the sign command's module and nothing of the other nineteen. The
loaders import by name (`from bot.cli.sign_cmd import app`), so the import contracts
(pyproject [tool.importlinter]) still see every edge. Help is click's plain layout: typer's rich
panels import rich and markdown-it, which cost more than all the rest of `owlia --help`.

Typer converts every option's value with a pydantic TypeAdapter built on first use: typer's adapter
module, pydantic and one adapter per option, about 80 ms of `owlia sign send`. `plain_values` gives
the str, int, bool and Path options a converter with the same results and the same errors that builds
none; any other type, or a value it does not recognise as plain, goes to typer's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Union

import typer
from typer._coercion import RuntimeParam, build_runtime_param
from typer._param_types import coerce_cli_path
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer._click import Command, Context, HelpFormatter  # the click that typer's groups are built on

# What a loader hands back: a sub-app, a command function, or a command already built (with additions).
Mountable = Union[typer.Typer, Callable[..., Any], "Command"]


def summary(help_text: str | None) -> str:
    """The first paragraph of a help text on one line: what a group's command list shows."""
    return " ".join((help_text or "").split("\n\n", 1)[0].split())


def build(name: str, target: Mountable) -> Command:
    """The click command `owlia` runs for `target`, exactly as `app.add_typer` / `app.command` would make it,
    with plain (not rich) help. A group's list shows each command's whole first paragraph, not click's
    first 45 characters."""
    if isinstance(target, (TyperCommand, TyperGroup)):
        return target  # already built
    holder = typer.Typer(rich_markup_mode=None, add_completion=False)
    if isinstance(target, typer.Typer):
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    command = typer.main.get_group(holder).commands[name]
    _whole_summaries(command)
    plain_values(command)
    return command


def _whole_summaries(command: Any) -> None:
    if not command.short_help and command.help:
        command.short_help = summary(command.help)
    for sub in getattr(command, "commands", {}).values():
        _whole_summaries(sub)


# What pydantic's lax int takes from a string, as far as this converter goes: more digits, spaces or
# underscores are left to typer's adapter (which accepts some of them), so the result never differs.
_PLAIN_INT = re.compile(r"[+-]?[0-9]{1,18}")


def _utf8(text: str) -> bool:
    """pydantic refuses a string it cannot encode (a lone surrogate from undecodable argv bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class PlainValue(RuntimeParam):
    """A str, int, bool or Path option's value converted as typer's adapter would, without building one."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        kind = self.annotation
        if kind is bool and type(value) is bool:
            return value
        if type(value) is str and _utf8(value):
            if kind is str:
                return value
            if kind is int and _PLAIN_INT.fullmatch(value):
                return int(value)
            if kind is Path and value and "\0" not in value:
                value = Path(value)  # what pydantic makes of it
        elif kind is not Path and type(value) is kind:  # a default already of its type: the adapter returns it unchanged
            return value
        if kind is Path and isinstance(value, Path):  # typer's own checks (exists, readable, ...) and messages
            return coerce_cli_path(value, self.parameter_info, path_type=Path, param=param, ctx=ctx)
        param._runtime_param = build_runtime_param(param.type_descriptor)  # anything else: typer's own, from now on
        return param._runtime_param._coerce_value(value, param=param, ctx=ctx)


def plain_values(command: Any) -> None:
    """Give `command`'s (and its subcommands') plain str, int, bool and Path options, `--help` included,
    the `PlainValue` converter."""
    for param in getattr(command, "params", ()):
        _plain(param)
    if hasattr(command, "get_help_option") and "get_help_option" not in vars(command):
        built = command.get_help_option  # click makes `--help` on the first parse, from the context's names

        def get_help_option(ctx: Any) -> Any:
            option = built(ctx)
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
    if (descriptor.annotation in (str, int, bool, Path) and param.nargs == 1 and not param.multiple
            and info.parser is None and info.path_type is None and not descriptor.is_file
            and not descriptor.is_choice and not descriptor.is_ranged):
        param._runtime_param = PlainValue(parameter_info=info, annotation=descriptor.annotation)


@dataclass(frozen=True)
class Mount:
    summary: str  # the first paragraph of the command's help (tests/bot/test_cli_startup.py holds them equal)
    load: Callable[[], Mountable]


class MountedCommands(MutableMapping[str, "Command"]):
    """A group's commands by name, in mount order; a mounted command is loaded on its first lookup."""

    def __init__(self, mounts: Mapping[str, Mount], built: Mapping[str, Command]) -> None:
        self._mounts = mounts
        self._built: dict[str, Command] = dict(built)

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            self._built[name] = build(name, self._mounts[name].load())
        return self._built[name]

    def __contains__(self, name: object) -> bool:  # without loading
        return name in self._mounts or name in self._built

    def __iter__(self) -> Iterator[str]:
        yield from self._mounts
        yield from (name for name in self._built if name not in self._mounts)

    def __len__(self) -> int:
        return len(self._mounts.keys() | self._built.keys())

    def __setitem__(self, name: str, command: Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("a mounted command cannot be removed")

    def summary(self, name: str) -> str:
        if name in self._mounts:
            return self._mounts[name].summary
        return summary(self[name].short_help or self[name].help)


class LazyGroup(TyperGroup):
    """The root group: a subclass names its `mounts` (name -> Mount), in the order help lists them."""

    mounts: ClassVar[Mapping[str, Mount]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        plain_values(self)  # its own options (`--home`); each mounted command gets them in `build`
        self.commands = MountedCommands(self.mounts, self.commands)

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)  # TyperGroup's walks .items(), which would load every command

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        commands = self.commands
        assert isinstance(commands, MountedCommands)
        rows = [(name, commands.summary(name)) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
