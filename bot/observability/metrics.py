"""A small thread-safe metrics registry that renders the Prometheus text format (0.0.4).

We do not depend on prometheus_client: the bot needs a dozen counters, one exposition format and
no global state, and a registry we own is one less dependency in a process that holds a chat
token. Values are plain ints/floats (counts and seconds, never money). Every misuse (unknown
metric, wrong label set, negative counter increment) raises ValueError so mistakes surface in
tests instead of silently producing wrong numbers.
"""

from __future__ import annotations

import bisect
import contextlib
import enum
import logging
import math
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["counter", "gauge", "histogram"]
Number = int | float

DEFAULT_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
MAX_SERIES_PER_METRIC = 1000  # label values must come from small fixed sets; this catches leaks

_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def escape_label_value(value: str) -> str:
    """Escape per the exposition format: backslash, double quote and line feed."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: Number) -> str:
    """Render a sample value: ints stay ints, infinities and NaN use Prometheus spelling."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _check_number(value: object, what: str) -> Number:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be an int or float, got {type(value).__name__}")
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"{what} must not be NaN")
    return value


@dataclass
class _Histogram:
    counts: list[int]  # per bucket (not cumulative); the last slot is the +Inf overflow
    sum: Number = 0
    count: int = 0


@dataclass
class _Metric:
    name: str
    help: str
    kind: Kind
    labelnames: tuple[str, ...]
    buckets: tuple[float, ...] = ()
    values: dict[tuple[str, ...], Number] = field(default_factory=dict)
    hists: dict[tuple[str, ...], _Histogram] = field(default_factory=dict)

    def new_hist(self) -> _Histogram:
        return _Histogram(counts=[0] * (len(self.buckets) + 1))


@contextlib.contextmanager
def best_effort() -> Iterator[None]:
    """Metrics must never break a request: a name the registry lacks is logged and skipped."""
    try:
        yield
    except ValueError:
        logging.getLogger(__name__).debug("metric not recorded", exc_info=True)


class Metrics:
    """Registry of named counters, gauges and histograms; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._metrics: dict[str, _Metric] = {}

    # -- registration -------------------------------------------------------------------------

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        self._register(name, help, "counter", labelnames, ())

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> None:
        self._register(name, help, "gauge", labelnames, ())

    def histogram(
        self,
        name: str,
        help: str,
        labelnames: Sequence[str] = (),
        buckets: Iterable[float] = DEFAULT_BUCKETS,
    ) -> None:
        bounds = tuple(float(b) for b in buckets)
        if not bounds or any(math.isnan(b) or math.isinf(b) for b in bounds):
            raise ValueError(f"histogram {name!r} needs at least one finite bucket bound")
        if any(a >= b for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"histogram {name!r} bucket bounds must be strictly increasing")
        if "le" in labelnames:
            raise ValueError(f"histogram {name!r} may not use the reserved label 'le'")
        self._register(name, help, "histogram", labelnames, bounds)

    def _register(
        self, name: str, help: str, kind: Kind, labelnames: Sequence[str], buckets: tuple[float, ...]
    ) -> None:
        """Idempotent for an identical definition; a conflicting one is a programming error."""
        if not _NAME_RE.match(name):
            raise ValueError(f"invalid metric name {name!r}")
        labels = tuple(labelnames)
        for label in labels:
            if not _LABEL_RE.match(label) or label.startswith("__"):
                raise ValueError(f"invalid label name {label!r} for metric {name!r}")
        if len(set(labels)) != len(labels):
            raise ValueError(f"duplicate label names for metric {name!r}")
        with self._lock:
            existing = self._metrics.get(name)
            if existing is not None:
                if (existing.kind, existing.labelnames, existing.buckets) != (kind, labels, buckets):
                    raise ValueError(f"metric {name!r} is already registered as a different {existing.kind}")
                return
            metric = _Metric(name, help, kind, labels, buckets)
            if not labels:  # an unlabelled series exists from the start, so it renders as 0
                if kind == "histogram":
                    metric.hists[()] = metric.new_hist()
                else:
                    metric.values[()] = 0
            self._metrics[name] = metric

    # -- updates ------------------------------------------------------------------------------

    def inc(self, name: str, value: Number = 1, **labels: object) -> None:
        """Add to a counter (value >= 0) or a gauge (any sign)."""
        value = _check_number(value, "increment")
        with self._lock:
            metric = self._get(name, ("counter", "gauge"))
            if metric.kind == "counter" and (value < 0 or math.isinf(value)):
                raise ValueError(f"counter {name!r} can only increase by a finite amount")
            key = self._key(metric, labels)
            metric.values[key] = metric.values.get(key, 0) + value

    def set(self, name: str, value: Number, **labels: object) -> None:
        value = _check_number(value, "gauge value")
        with self._lock:
            metric = self._get(name, ("gauge",))
            metric.values[self._key(metric, labels)] = value

    def observe(self, name: str, value: Number, **labels: object) -> None:
        value = _check_number(value, "observation")
        with self._lock:
            metric = self._get(name, ("histogram",))
            key = self._key(metric, labels)
            hist = metric.hists.get(key)
            if hist is None:
                hist = metric.hists[key] = metric.new_hist()
            hist.counts[bisect.bisect_left(metric.buckets, value)] += 1
            hist.sum += value
            hist.count += 1

    def value(self, name: str, **labels: object) -> Number:
        """Current value of a counter or gauge series (0 if never touched); for tests and status."""
        with self._lock:
            metric = self._get(name, ("counter", "gauge"))
            return metric.values.get(self._key(metric, labels, create=False), 0)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._metrics

    def _get(self, name: str, kinds: tuple[Kind, ...]) -> _Metric:
        metric = self._metrics.get(name)
        if metric is None:
            raise ValueError(f"unknown metric {name!r}")
        if metric.kind not in kinds:
            raise ValueError(f"metric {name!r} is a {metric.kind}, not a {' or '.join(kinds)}")
        return metric

    @staticmethod
    def _key(metric: _Metric, labels: dict[str, object], *, create: bool = True) -> tuple[str, ...]:
        if set(labels) != set(metric.labelnames):
            raise ValueError(
                f"metric {metric.name!r} takes labels {sorted(metric.labelnames)}, got {sorted(labels)}"
            )
        key = tuple(_label_value(metric.name, labels[n]) for n in metric.labelnames)
        series = metric.hists if metric.kind == "histogram" else metric.values
        if create and key not in series and len(series) >= MAX_SERIES_PER_METRIC:
            raise ValueError(f"metric {metric.name!r} exceeded {MAX_SERIES_PER_METRIC} label combinations")
        return key

    # -- exposition ---------------------------------------------------------------------------

    def render(self) -> str:
        """The whole registry in text format 0.0.4, metrics by name and series by label values."""
        lines: list[str] = []
        with self._lock:
            for name in sorted(self._metrics):
                metric = self._metrics[name]
                lines.append(f"# HELP {name} {_escape_help(metric.help)}")
                lines.append(f"# TYPE {name} {metric.kind}")
                if metric.kind == "histogram":
                    for key in sorted(metric.hists):
                        lines.extend(_histogram_lines(metric, key, metric.hists[key]))
                else:
                    for key in sorted(metric.values):
                        labels = _labels(metric.labelnames, key)
                        lines.append(f"{name}{labels} {format_value(metric.values[key])}")
        return "\n".join(lines) + "\n" if lines else ""


def _label_value(metric: str, value: object) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"label values of {metric!r} must be str or int, got {type(value).__name__}")
    return str(value)


def _labels(names: Sequence[str], values: Sequence[str], extra: tuple[str, str] | None = None) -> str:
    pairs = list(zip(names, values))
    if extra is not None:
        pairs.append(extra)
    if not pairs:
        return ""
    return "{" + ",".join(f'{n}="{escape_label_value(v)}"' for n, v in pairs) + "}"


def _histogram_lines(metric: _Metric, key: tuple[str, ...], hist: _Histogram) -> list[str]:
    out: list[str] = []
    running = 0
    bounds = [format_value(b) for b in metric.buckets] + ["+Inf"]
    for bound, count in zip(bounds, hist.counts):
        running += count
        out.append(f"{metric.name}_bucket{_labels(metric.labelnames, key, ('le', bound))} {running}")
    labels = _labels(metric.labelnames, key)
    out.append(f"{metric.name}_sum{labels} {format_value(hist.sum)}")
    out.append(f"{metric.name}_count{labels} {hist.count}")
    return out


def default_metrics() -> Metrics:
    """The bot's standard metrics; callers update them by name."""
    m = Metrics()
    m.counter("owlia_messages_total", "Inbound chat messages accepted, by channel.", ("channel",))
    m.counter("owlia_agent_runs_total", "Agent runs finished, by outcome.", ("outcome",))
    m.histogram("owlia_agent_run_seconds", "Wall-clock duration of one agent run.")
    m.counter("owlia_tool_calls_total", "Tool calls by tool, tier, outcome.", ("tool", "level", "outcome"))
    m.histogram("owlia_tool_seconds", "Tool call duration, by tier.", ("level",))
    m.counter("owlia_llm_tokens_total", "LLM tokens, by direction (input/output).", ("direction",))
    m.counter("owlia_llm_fallbacks_total", "Times the LLM router fell back to another provider.")
    m.counter("owlia_sign_requests_total", "Signer requests, by resulting status.", ("status",))
    m.gauge("owlia_uptime_seconds", "Seconds since the bot process started.")
    m.counter("owlia_events_total", "Runtime events emitted, by type.", ("type",))
    return m
