"""A tiny, strict parser for the Prometheus text format, so tests read exposition back.

Written independently of bot.observability.metrics (character by character, no shared helpers) so a
symmetric escaping bug in the renderer cannot hide behind the same bug in the test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]


@dataclass
class Exposition:
    helps: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    samples: dict[tuple[str, Labels], float] = field(default_factory=dict)
    order: list[tuple[str, Labels]] = field(default_factory=list)

    def get(self, name: str, **labels: str) -> float:
        return self.samples[(name, tuple(sorted(labels.items())))]

    def series(self, name: str) -> dict[Labels, float]:
        return {labels: v for (n, labels), v in self.samples.items() if n == name}


_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


def _unescape_help(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in ("\\", "n"):
            out.append(_ESCAPES[text[i + 1]])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _parse_labels(line: str, i: int) -> tuple[dict[str, str], int]:
    """Parse `{a="x",b="y"}` starting at line[i] == '{'; return labels and index after '}'."""
    assert line[i] == "{"
    i += 1
    labels: dict[str, str] = {}
    while line[i] != "}":
        eq = line.index("=", i)
        name = line[i:eq]
        assert name.isidentifier(), f"bad label name {name!r}"
        assert line[eq + 1] == '"', "label value must be quoted"
        i = eq + 2
        value: list[str] = []
        while line[i] != '"':
            if line[i] == "\\":
                escaped = line[i + 1]
                assert escaped in _ESCAPES, f"invalid escape \\{escaped}"
                value.append(_ESCAPES[escaped])
                i += 2
            else:
                assert line[i] != "\n"
                value.append(line[i])
                i += 1
        assert name not in labels, f"duplicate label {name}"
        labels[name] = "".join(value)
        i += 1
        if line[i] == ",":
            i += 1
    return labels, i + 1


def _parse_value(text: str) -> float:
    return {"+Inf": float("inf"), "-Inf": float("-inf"), "NaN": float("nan")}.get(text) or float(text)


def parse(text: str) -> Exposition:
    assert text == "" or text.endswith("\n"), "exposition must end with a newline"
    out = Exposition()
    for line in text[:-1].split("\n") if text else []:  # only \n separates lines in this format
        if line.startswith("# HELP "):
            name, _, help_text = line[len("# HELP ") :].partition(" ")
            out.helps[name] = _unescape_help(help_text)
        elif line.startswith("# TYPE "):
            name, kind = line[len("# TYPE ") :].split(" ")
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped")
            out.types[name] = kind
        else:
            i = 0
            while i < len(line) and line[i] not in "{ ":
                i += 1
            name = line[:i]
            labels: dict[str, str] = {}
            if line[i] == "{":
                labels, i = _parse_labels(line, i)
            assert line[i] == " ", f"expected a space before the value in {line!r}"
            key = (name, tuple(sorted(labels.items())))
            assert key not in out.samples, f"duplicate sample {key}"
            out.samples[key] = _parse_value(line[i + 1 :])
            out.order.append(key)
    return out
