"""The tables in the docs that the code decides, made from the code.

A table between the two markers below is generated here; `tests/test_docs_tables.py` fails when the
docs hold another one, and `.venv/bin/python -m tests.docs_tables` rewrites them in place. Tables that
carry words only a person can write (what a command is for, what a rule means) are checked instead:
every command, method and rule id they name must exist, and every one that exists must be named.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from signer.wire.protocol import Scope

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- generated from the code by tests/docs_tables.py: {name} -->"
END = "<!-- end of generated table -->"


def method_scopes() -> dict[str, Scope]:
    """Every method the signer serves, and the scope it asks for: read off a daemon built (not started)
    on a throwaway home, so it is the table the server really dispatches on."""
    from tests.conftest import InProcessSigner

    with tempfile.TemporaryDirectory() as directory:
        daemon = InProcessSigner(Path(directory), "http://127.0.0.1:9").daemon()  # never contacted
        try:
            return {name: method.scope for name, method in daemon.server.methods.items()}
        finally:
            daemon.master.zeroize()
            daemon.reader.close()
            daemon.writer_conn.close()


def _names(methods: list[str]) -> str:
    return ", ".join(f"`{m}`" for m in sorted(methods))


def scope_table(scopes: Mapping[str, Scope]) -> str:
    """docs/signer-protocol.md's "scope | may call", by rank (read < sign < admin; bridge apart)."""
    by = {scope: [m for m, s in scopes.items() if s is scope] for scope in Scope}
    return "\n".join(
        [
            "| scope | may call |",
            "| --- | --- |",
            f"| `read` | {_names(by[Scope.READ])} |",
            f"| `sign` | everything `read` may, plus {_names(by[Scope.SIGN])} |",
            f"| `admin` | everything `sign` may, plus {_names(by[Scope.ADMIN])}, and every `bridge` method |",
            f"| `bridge` | only {_names(by[Scope.BRIDGE])} (outside the ladder: a `bridge` token calls no other "
            "method, and no `read` or `sign` token calls these) |",
        ]
    )


GENERATED = {  # name: (doc, how to make it)
    "scopes": ("docs/signer-protocol.md", lambda: scope_table(method_scopes())),
}


def _block(text: str, name: str) -> tuple[int, int]:
    begin = text.index(BEGIN.format(name=name))
    start = text.index("\n", begin) + 1
    return start, text.index(END, start)


def current(name: str) -> str:
    doc, _ = GENERATED[name]
    text = (ROOT / doc).read_text()
    start, end = _block(text, name)
    return text[start:end].strip()


def rewrite(name: str) -> bool:
    """Put the generated table in its doc; True if that changed the file."""
    doc, make = GENERATED[name]
    path = ROOT / doc
    text = path.read_text()
    start, end = _block(text, name)
    new = text[:start] + make() + "\n" + text[end:]
    if new == text:
        return False
    path.write_text(new)
    return True


# ---- checked tables ---------------------------------------------------------------------------


def cli_commands() -> set[str]:
    """Every leaf command of `owlia`, as typed ("signer client add"), loading each lazy group. Walked
    by the click interface typer's groups have (its own vendored click, so no isinstance)."""
    import typer

    from bot.cli.app import app

    root = typer.main.get_command(app)

    def walk(command: Any, prefix: str, ctx: Any) -> Iterator[str]:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    yield from walk(
                        sub, f"{prefix} {name}".strip(), type(ctx)(sub, parent=ctx, info_name=name)
                    )
        else:
            yield prefix

    return set(walk(root, "", root.context_class(root, info_name="owlia")))


_CELL_COMMAND = re.compile(r"`owlia ([a-z][a-z0-9 /\-|]*?)(?: \[|`| [A-Z@\-]|$)")


def _command_words(text: str) -> list[str]:
    """The command's own words: lowercase, no arguments (NAME, PATH, 0.01eth, read|sign|admin, --flag)."""
    return [w for w in text.split() if w.replace("-", "").isalpha() and w.islower() and not w.startswith("-")]


def readme_commands() -> set[str]:
    """The commands the README's table names: `owlia signer init / serve` is `signer init` and `signer serve`."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Commands") :]
    table = table[: table.index("\n## ", 5)]
    named: set[str] = set()
    for line in table.splitlines():
        if not line.startswith("| `owlia"):
            continue
        for cell in re.findall(r"`owlia ([^`]*)`", line.split(" | ")[0]):
            head, *others = [_command_words(part) for part in cell.split(" / ")]
            named.add(" ".join(head))
            named.update(" ".join([*head[:-1], *words[:1]]) for words in others if words)
    return named


RULE_SOURCES = ("policies/evaluate.py", "policies/decision.py", "policies/decode.py")
# Rule ids made from a template (`f"{prefix}.per_tx"`, `f"{prefix}.window.{label}"`, prefix limit or usd).
_TEMPLATES = {
    'f"{prefix}.per_tx"': ("limit.per_tx", "usd.per_tx"),
    'f"{prefix}.window.{': ("limit.window.<label>", "usd.window.<label>"),
}


def rule_ids_in_code() -> set[str]:
    """Rule ids the policy can name: quoted `area.name` literals where decisions are made, and the
    templated ones (each template must still be there)."""
    text = "\n".join((ROOT / source).read_text() for source in RULE_SOURCES)
    found = {r for r in re.findall(r"\"([a-z_0-9]+\.[a-z_0-9.]+)\"", text) if not r.endswith((".py", ".md"))}
    for template, ids in _TEMPLATES.items():
        assert template in text, f"the rule id template {template} is gone: update tests/docs_tables.py"
        found.update(ids)
    return found


def rule_ids_in_docs() -> set[str]:
    text = (ROOT / "docs" / "policy.md").read_text()
    table = text[text.index("## Rule ids") :]
    table = table[: table.index("\n## ", 5)]
    return set(re.findall(r"^\| `([a-z_0-9]+\.[a-z_0-9.<>]+)`", table, re.M))


def main() -> None:
    changed = [name for name in GENERATED if rewrite(name)]
    print("rewrote: " + ", ".join(changed) if changed else "every generated table is current")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
