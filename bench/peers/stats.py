"""Summary statistics shared by every measurement: median, nearest-rank p90 and the quiet-run subsets.
It is a leaf module with no project imports, so the process, machine and measuring modules can all report
numbers the same way without import cycles.
"""

from __future__ import annotations

import statistics
from typing import Any


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 100)) - 1))
    return s[k]


def summary(values: list[float], digits: int = 3) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "median": round(statistics.median(values), digits),
        "p90": round(pct(values, 90), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "runs": [round(v, digits) for v in values],
    }


def quiet_subset(entry: dict[str, Any], threshold: float) -> None:
    """Add cold-start / idle-RSS summaries over only the runs during which the machine was quiet
    (other work below `threshold` of all CPUs both just before spawn and just after stop)."""
    cs = entry.get("cold_start")
    if not cs or "checks_per_run" not in cs:
        return
    keep = [
        i
        for i, c in enumerate(cs["checks_per_run"])
        if c.get("machine_before", {}).get("other_cpu_busy", 1) < threshold
        and c.get("other_cpu_busy_after", 1) < threshold
    ]
    cs["quiet_runs"] = {
        **summary([cs["runs"][i] for i in keep]),
        "run_indexes": keep,
        "rule": f"runs with other work < {threshold:.0%} of all CPUs before spawn and after stop",
    }
    im = entry.get("idle_memory")
    if im and "rss_mib" in im:  # files from before the MiB names have none to summarise
        im["rss_mib_quiet_runs"] = summary([im["rss_mib"]["runs"][i] for i in keep], 1)
