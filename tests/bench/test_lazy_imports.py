"""bench/lazy_imports.py: the sites it finds and the figures it writes beside them."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from bench import lazy_imports
from bench.lazy_imports import Cost

PROBE = textwrap.dedent(
    """\
    import os


    def plain():
        import json

        return json


    class Holder:
        def method(self):
            if os.environ:
                from pathlib import (
                    Path,  # a reason the author wrote
                )
                import shutil  # another reason
            return Path, shutil


    def cheap():
        import io

        return io
    """
)


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "probe.py").write_text(PROBE)
    return tmp_path / "bot" / "probe.py"


def test_sites_are_runs_of_imports_inside_functions_keyed_without_comments(tmp_path: Path) -> None:
    sites = lazy_imports.sites_in(_tree(tmp_path), tmp_path)
    assert [(s.function, s.line, s.statements) for s in sites] == [
        ("plain", 5, ("import json",)),
        ("Holder.method", 13, ("from pathlib import Path", "import shutil")),
        ("cheap", 21, ("import io",)),
    ]
    assert sites[1].key == "bot.probe:Holder.method:from pathlib import Path | import shutil"


def test_figures_are_written_and_rewritten_keeping_the_authors_reasons(tmp_path: Path) -> None:
    path = _tree(tmp_path)
    keys = {s.function: s.key for s in lazy_imports.sites_in(path, tmp_path)}
    first = {
        keys["plain"]: Cost(41.2, 900),
        keys["Holder.method"]: Cost(7.6, 12),
        keys["cheap"]: Cost(0.4, 8),
    }
    not_felt = lazy_imports.write_marks(first, tmp_path)
    assert [s.function for s in not_felt] == ["cheap"]  # left as it was, for its author to hoist
    text = path.read_text()
    assert "import json  # lazy: 41 ms, 900 KiB\n" in text
    assert "from pathlib import (  # lazy: 8 ms, 12 KiB (2 imports)\n" in text
    assert "import shutil  # another reason\n" in text and "import io\n" in text
    # again, with new figures: the old ones go, wherever they are, and the reasons stay
    text = text.replace("import (  # lazy: 8 ms, 12 KiB (2 imports)\n", "import (\n").replace(
        "Path,  # a reason", "Path,  # lazy: 8 ms, 12 KiB; a reason"
    )
    path.write_text(text)
    second = dict(first) | {keys["plain"]: Cost(39.9, 880), keys["Holder.method"]: Cost(9.1, 20)}
    lazy_imports.write_marks(second, tmp_path)
    text = path.read_text()
    ast.parse(text)
    assert "import json  # lazy: 40 ms, 880 KiB\n" in text
    assert "from pathlib import (  # lazy: 9 ms, 20 KiB (2 imports)\n" in text
    assert "Path,  # a reason the author wrote\n" in text
    assert text.count("# lazy:") == 2
    sites = {s.function: s for s in lazy_imports.sites_in(path, tmp_path)}
    assert lazy_imports.written(sites["plain"]) == (40, 880)
    assert lazy_imports.written(sites["Holder.method"]) == (9, 20)
