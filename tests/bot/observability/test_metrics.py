"""The metrics registry: registration rules, misuse errors, and exposition read back by a parser."""

from __future__ import annotations

import enum
import math
import threading

import pytest
from hypothesis import given, settings, strategies as st

from bot.observability.metrics import DEFAULT_BUCKETS, MAX_SERIES_PER_METRIC, Metrics, default_metrics
from tests.bot.observability.promtext import parse


def test_registration_is_idempotent_but_conflicts_are_errors() -> None:
    m = Metrics()
    m.counter("c_total", "help", ("a",))
    m.counter("c_total", "other help text is fine", ("a",))
    with pytest.raises(ValueError):
        m.gauge("c_total", "help", ("a",))
    with pytest.raises(ValueError):
        m.counter("c_total", "help", ("b",))
    m.histogram("h", "help", buckets=(1, 2))
    with pytest.raises(ValueError):
        m.histogram("h", "help", buckets=(1, 3))


@pytest.mark.parametrize(
    "register",
    [
        lambda m: m.counter("bad-name", "x"),
        lambda m: m.counter("ok", "x", ("bad-label",)),
        lambda m: m.counter("ok", "x", ("__reserved",)),
        lambda m: m.counter("ok", "x", ("a", "a")),
        lambda m: m.histogram("h", "x", ("le",)),
        lambda m: m.histogram("h", "x", buckets=(2, 1)),
        lambda m: m.histogram("h", "x", buckets=()),
        lambda m: m.histogram("h", "x", buckets=(1, float("inf"))),
    ],
)
def test_invalid_definitions_are_rejected(register) -> None:
    with pytest.raises(ValueError):
        register(Metrics())


def test_misuse_raises_value_error() -> None:
    m = Metrics()
    m.counter("c_total", "c", ("a",))
    m.gauge("g", "g")
    m.histogram("h", "h")
    for call in (
        lambda: m.inc("nope"),
        lambda: m.inc("c_total"),  # missing label
        lambda: m.inc("c_total", a="x", b="y"),  # extra label
        lambda: m.inc("c_total", -1, a="x"),
        lambda: m.inc("c_total", float("inf"), a="x"),
        lambda: m.inc("c_total", float("nan"), a="x"),
        lambda: m.inc("c_total", True, a="x"),
        lambda: m.inc("c_total", "1", a="x"),
        lambda: m.inc("c_total", a=1.5),  # label values are str/int only
        lambda: m.set("c_total", 1, a="x"),
        lambda: m.observe("g", 1),
        lambda: m.inc("h"),
    ):
        with pytest.raises(ValueError):
            call()
    assert m.value("c_total", a="x") == 0


def test_series_cardinality_is_capped() -> None:
    m = Metrics()
    m.counter("c_total", "c", ("id",))
    for i in range(MAX_SERIES_PER_METRIC):
        m.inc("c_total", id=i)
    m.inc("c_total", id=0)  # existing series still fine
    with pytest.raises(ValueError):
        m.inc("c_total", id="one too many")


def test_render_format_and_ordering() -> None:
    m = Metrics()
    m.gauge("z_gauge", "Last one.\nSecond line with \\ backslash.")
    m.counter("a_total", "First.", ("k",))
    m.inc("a_total", k="b")
    m.inc("a_total", 2.5, k="a")
    m.set("z_gauge", -3)
    text = m.render()
    assert text.splitlines() == [
        "# HELP a_total First.",
        "# TYPE a_total counter",
        'a_total{k="a"} 2.5',
        'a_total{k="b"} 1',
        "# HELP z_gauge Last one.\\nSecond line with \\\\ backslash.",
        "# TYPE z_gauge gauge",
        "z_gauge -3",
    ]
    assert text == m.render()  # stable
    assert parse(text).helps["z_gauge"] == "Last one.\nSecond line with \\ backslash."


def test_histogram_buckets_are_cumulative() -> None:
    m = Metrics()
    m.histogram("lat_seconds", "latency", ("level",), buckets=(0.1, 1, 10))
    for v in (0.05, 0.1, 0.5, 2, 20, 30):
        m.observe("lat_seconds", v, level="read")
    exp = parse(m.render())
    assert exp.types["lat_seconds"] == "histogram"
    bounds = ("0.1", "1.0", "10.0", "+Inf")
    buckets = [(le, exp.get("lat_seconds_bucket", level="read", le=le)) for le in bounds]
    assert buckets == [("0.1", 2), ("1.0", 3), ("10.0", 4), ("+Inf", 6)]  # le is inclusive
    assert exp.get("lat_seconds_count", level="read") == 6
    assert exp.get("lat_seconds_sum", level="read") == pytest.approx(52.65)
    order = [key for key in exp.order if key[0] == "lat_seconds_bucket"]
    counts = [exp.samples[key] for key in order]
    assert counts == sorted(counts)


def test_default_metrics_render_and_accept_standard_labels() -> None:
    m = default_metrics()
    m.inc("owlia_messages_total", channel="telegram")
    m.inc("owlia_tool_calls_total", tool="balance", level="read", outcome="ok")
    m.observe("owlia_tool_seconds", 0.2, level="read")
    m.observe("owlia_agent_run_seconds", 1.5)
    m.inc("owlia_llm_tokens_total", 1200, direction="input")
    m.inc("owlia_llm_fallbacks_total")
    m.inc("owlia_sign_requests_total", status="approved")
    m.inc("owlia_events_total", type="agent")
    m.inc("owlia_agent_runs_total", outcome="ok")
    m.set("owlia_uptime_seconds", 12.5)
    exp = parse(m.render())
    assert exp.get("owlia_llm_fallbacks_total") == 1
    assert exp.get("owlia_uptime_seconds") == 12.5
    assert exp.get("owlia_agent_run_seconds_bucket", le="+Inf") == 1
    assert len(exp.series("owlia_agent_run_seconds_bucket")) == len(DEFAULT_BUCKETS) + 1
    assert {n for n, kind in exp.types.items() if kind == "histogram"} == {
        "owlia_agent_run_seconds",
        "owlia_tool_seconds",
    }


def test_enum_label_values_use_their_value() -> None:
    class Level(str, enum.Enum):  # like bot.tools.base.Level, whose str() is "Level.READ" on 3.11
        READ = "read"

    m = Metrics()
    m.histogram("t", "t", ("level",))
    m.observe("t", 1, level=Level.READ)
    assert parse(m.render()).get("t_count", level="read") == 1


def test_concurrent_increments_are_not_lost() -> None:
    m = Metrics()
    m.counter("c_total", "c", ("t",))

    def work() -> None:
        for _ in range(2000):
            m.inc("c_total", t="x")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.value("c_total", t="x") == 16000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=5, unique=True))
def test_label_values_round_trip_through_escaping(values: list[str]) -> None:
    m = Metrics()
    m.counter("c_total", "c", ("v",))
    for i, value in enumerate(values):
        m.inc("c_total", i + 1, v=value)
    exp = parse(m.render())
    assert exp.series("c_total") == {(("v", value),): i + 1 for i, value in enumerate(values)}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(min_value=-1000, max_value=1000),
            st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        ),
        max_size=30,
    )
)
def test_counters_never_decrease(increments: list[float]) -> None:
    m = Metrics()
    m.counter("c_total", "c")
    previous = m.value("c_total")
    for amount in increments:
        if amount < 0:
            with pytest.raises(ValueError):
                m.inc("c_total", amount)
        else:
            m.inc("c_total", amount)
        current = m.value("c_total")
        assert current >= previous and not math.isnan(current)
        previous = current
    assert parse(m.render()).get("c_total") == pytest.approx(previous)
