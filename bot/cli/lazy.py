"""A command group that imports a command's module when that command runs, not when `owlia` starts.

`owlia --help` lists every command from a summary kept next to its loader, so it imports none of
them; `owlia sign send` imports the sign command's module and nothing of the other nineteen. The
loaders import by name (`from bot.cli.sign_cmd import app`), so the import contracts
(pyproject [tool.importlinter]) still see every edge. Help is click's plain layout: typer's rich
panels import rich and markdown-it, which cost more than all the rest of `owlia --help`.

Every command built here converts its plain options without typer's pydantic adapters
(bot/cli/values.py), and a mount marked `one_shot` lets the `owlia` process skip Python's teardown
(bot/cli/process.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Union

import typer
from typer.core import TyperCommand, TyperGroup

from bot.cli import process
from bot.cli.values import plain_values

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


@dataclass(frozen=True)
class Mount:
    summary: str  # the first paragraph of the command's help (tests/bot/test_cli_startup.py holds them equal)
    load: Callable[[], Mountable]
    one_shot: bool = False  # sends a request, prints the answer, writes no file: see bot/cli/process.py


class MountedCommands(MutableMapping[str, "Command"]):
    """A group's commands by name, in mount order; a mounted command is loaded on its first lookup."""

    def __init__(self, mounts: Mapping[str, Mount], built: Mapping[str, Command]) -> None:
        self._mounts = mounts
        self._built: dict[str, Command] = dict(built)

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            mount = self._mounts[name]
            process.loading(one_shot=mount.one_shot)
            self._built[name] = build(name, mount.load())
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
