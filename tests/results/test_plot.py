"""Plots of run results: the layout decisions (pure, hand-derived expectations), the PNG itself,
the missing-matplotlib path, the runner's automatic results.png and the ``collhub pipeline plot`` CLI.

The CLI test drives the real built-in producers and simulator (areas hub.algorithms, hub.sim)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hub._units import format_size
from hub.errors import FormatError, UsageError
from hub.pipeline import plot_layout, plot_results, run_pipeline_text
from hub.results import _plot
from hub.results._plot import auto_plot, parse_bytes

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _row(
    source: str,
    point: dict[str, Any],
    busbw: float | None,
    *,
    consumer: str = "sim",
    status: str = "ok",
    time_us: float = 1.0,
) -> dict[str, Any]:
    metrics: dict[str, Any] = {} if status != "ok" else {"time_us": time_us, "collective": "allreduce", "ranks": 4}
    if busbw is not None and status == "ok":
        metrics["busbw_GBps"] = busbw
    return {
        "source": source,
        "consumer": consumer,
        "component": "hub.simulate",
        "point": point,
        "status": status,
        "metrics": metrics,
        "error": None if status == "ok" else "SimulationError: boom",
    }


def _doc(rows: list[dict[str, Any]], variables: list[str], name: str = "demo") -> dict[str, Any]:
    return {"format": "collhub-run/1", "pipeline": {"name": name}, "variables": variables, "rows": rows}


def size_network_doc() -> dict[str, Any]:
    """2 sources x sizes (64KiB, 1MiB) x networks (ring:4, switch:4); tree at 1MiB on switch:4 failed."""
    rows = []
    for src, base in (("ring", 10.0), ("tree", 5.0)):
        for size, k in (("64KiB", 1), ("1MiB", 2)):
            for net, j in (("ring:4", 0), ("switch:4", 1)):
                failed = src == "tree" and size == "1MiB" and net == "switch:4"
                rows.append(
                    _row(src, {"size": size, "network": net}, base * k + j, status="failed" if failed else "ok")
                )
    return _doc(rows, ["size", "network"])


# ---------------------------------------------------------------------------------------------
# layout


def test_layout_size_by_network() -> None:
    lay = plot_layout(size_network_doc())
    assert lay.x == "size" and lay.x_kind == "bytes" and lay.x_scale == "log2"
    assert lay.x_values == (65536.0, 1048576.0)  # 64 * 2^10, 2^20
    assert lay.panel_vars == ("network",)
    assert [p.title for p in lay.panels] == ["network = ring:4", "network = switch:4"]
    assert lay.series == ("ring", "tree")
    ring_panel, switch_panel = lay.panels
    # values: base * (1 for 64KiB, 2 for 1MiB) + (0 on ring:4, 1 on switch:4)
    assert ring_panel.lines == {
        "ring": [(65536.0, 10.0), (1048576.0, 20.0)],
        "tree": [(65536.0, 5.0), (1048576.0, 10.0)],
    }
    assert switch_panel.lines == {"ring": [(65536.0, 11.0), (1048576.0, 21.0)], "tree": [(65536.0, 6.0)]}
    assert lay.failed == 1 and lay.missing == 0
    assert lay.y_label == "bus bandwidth (GB/s)" and lay.y_scale == "linear"
    assert lay.x_label == "size (bytes)"
    assert lay.title.splitlines() == [
        "demo: bus bandwidth vs size",
        "allreduce on 4 ranks, hub.simulate; 1 failed row(s) not shown",
    ]


def test_layout_time_metric_log_y_and_single_panel() -> None:
    rows = [
        _row("ring", {"size": s, "network": "ring:4"}, 1.0, time_us=t)
        for s, t in ((1024, 2.0), (4096, 5.0), (65536, 40.0))
    ]
    lay = plot_layout(_doc(rows, ["size", "network"]), metric="time_us")
    # network has one value: not a panel; size given as plain ints is still a byte axis (its name).
    assert lay.panel_vars == () and [p.title for p in lay.panels] == [""]
    assert lay.x_kind == "bytes" and lay.x_values == (1024.0, 4096.0, 65536.0)
    assert lay.y_label == "time (µs)" and lay.y_scale == "log"  # 40 / 2 >= 10


def test_layout_explicit_panel_moves_other_variables_into_series() -> None:
    rows = [
        _row("ring", {"size": s, "network": n, "mode": m}, 1.0)
        for s in ("1KiB", "2KiB")
        for n in ("ring:4", "switch:4")
        for m in ("aware", "unaware")
    ]
    lay = plot_layout(_doc(rows, ["size", "network", "mode"]), panel="network")
    assert lay.panel_vars == ("network",)
    assert lay.series == ("ring (mode=aware)", "ring (mode=unaware)")
    lay = plot_layout(_doc(rows, ["size", "network", "mode"]), panel=[])
    assert [p.title for p in lay.panels] == [""]
    assert lay.series == (
        "ring (network=ring:4, mode=aware)",
        "ring (network=ring:4, mode=unaware)",
        "ring (network=switch:4, mode=aware)",
        "ring (network=switch:4, mode=unaware)",
    )


def test_layout_numeric_x_without_size_and_several_consumers() -> None:
    rows = [
        _row("ring", {"ranks": r, "network": "x"}, float(r), consumer=c)
        for r in (4, 8, 16, 32)
        for c in ("sim", "astra")
    ]
    lay = plot_layout(_doc(rows, ["network", "ranks"]))
    assert lay.x == "ranks" and lay.x_kind == "number" and lay.x_scale == "log2"  # powers of two over 8x
    assert lay.x_label == "ranks"
    assert lay.series == ("ring · sim", "ring · astra")
    lin = plot_layout(_doc([_row("a", {"n": n}, 1.0) for n in (1, 2, 3)], ["n"]))
    assert lin.x_scale == "linear"
    dec = plot_layout(_doc([_row("a", {"n": n}, 1.0) for n in (10, 100, 1000)], ["n"]))
    assert dec.x_scale == "log10"


def test_layout_mapping_values_and_matrix_order_of_panels() -> None:
    shapes = [{"ranks": 8, "groups": 2}, {"ranks": 16, "groups": 4}]
    # rows listed with the second shape first: panels still follow the document's matrix order
    rows = [_row("a", {"size": s, "shape": sh}, 1.0) for sh in reversed(shapes) for s in ("1MB", "2MB")]
    doc = _doc(rows, ["size", "shape"])
    doc["points"] = [{"size": s, "shape": sh} for s in ("1MB", "2MB") for sh in shapes]
    lay = plot_layout(doc)
    assert [p.title for p in lay.panels] == ["shape = ranks=8, groups=2", "shape = ranks=16, groups=4"]
    assert lay.x_values == (1e6, 2e6)  # decimal MB


def test_layout_errors_name_the_problem() -> None:
    doc = size_network_doc()
    with pytest.raises(UsageError, match="'tme_us'") as e:
        plot_layout(doc, metric="tme_us")
    assert e.value.hint is not None and "did you mean time_us?" in e.value.hint
    with pytest.raises(UsageError, match="'netwrk' is not a matrix variable") as e:
        plot_layout(doc, x="netwrk")
    assert "did you mean network?" in (e.value.hint or "")
    with pytest.raises(UsageError, match="'network' is not numeric"):
        plot_layout(doc, x="network")
    with pytest.raises(UsageError, match="cannot also split the panels"):
        plot_layout(doc, panel="size")
    with pytest.raises(UsageError, match="no numeric matrix variable"):
        plot_layout(_doc([_row("a", {"network": "ring:4"}, 1.0)], ["network"]))


def test_size_parsing_and_labels() -> None:
    assert parse_bytes("64KiB") == 65536 and parse_bytes("64KB") == 64000 and parse_bytes("1.5MiB") == 1572864
    assert parse_bytes(4096) == 4096 and parse_bytes("4096B") == 4096
    assert parse_bytes("ring:8") is None and parse_bytes(True) is None and parse_bytes(-1) is None
    assert [format_size(n, "label") for n in (100, 1000, 1536, 65536, 2**20, 16 * 2**20, 3 * 2**30, 10**9)] == [
        "100B",
        "1KB",
        "1.5KiB",
        "64KiB",
        "1MiB",
        "16MiB",
        "3GiB",
        "1GB",
    ]


# ---------------------------------------------------------------------------------------------
# rendering


def test_png_written_atomically_with_expected_size(tmp_path: Path) -> None:
    import matplotlib.image

    out = tmp_path / "sub" / "busbw.png"
    assert plot_results(size_network_doc(), out, dpi=100) == out
    assert out.read_bytes()[:8] == PNG_MAGIC
    # Two panels in one row: figsize (4.6 * 2 + 0.6, 3.5 * 1 + 1.2) in = (9.8, 4.7) in; at 100 dpi 980 x 470 px.
    assert matplotlib.image.imread(out).shape[:2] == (470, 980)
    assert sorted(p.name for p in out.parent.iterdir()) == ["busbw.png"]  # no temp file left behind
    plain = out.parent / "plain"
    plain.write_bytes(b"")  # created under the process umask, like the run's other files
    assert out.stat().st_mode == plain.stat().st_mode


def test_plot_from_run_dir_and_bad_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(size_network_doc()))
    out = plot_results(run, tmp_path / "t.png", metric="time_us")
    assert out.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(UsageError, match=r"results\.json: no successful row has the metric 'nope'"):
        plot_results(run, tmp_path / "n.png", metric="nope")
    assert not (tmp_path / "n.png").exists()
    (run / "results.json").write_text("{not json")
    with pytest.raises(FormatError, match="results.json: not a readable results document"):
        plot_results(run, tmp_path / "n.png")
    with pytest.raises(FormatError, match="no results file"):
        plot_results(tmp_path / "missing", tmp_path / "n.png")


def test_missing_matplotlib_is_a_usage_error_with_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` raise ImportError
    with pytest.raises(UsageError, match="matplotlib") as e:
        plot_results(size_network_doc(), tmp_path / "x.png")
    assert e.value.hint == 'pip install "collhub[plot]"'
    assert auto_plot(tmp_path, size_network_doc()) is None  # the runner just goes without a plot
    assert list(tmp_path.iterdir()) == []


def test_auto_plot_conditions_and_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    one_size = _doc(
        [_row("a", {"size": "1MiB", "network": n}, 1.0) for n in ("ring:4", "switch:4")], ["size", "network"]
    )
    assert auto_plot(tmp_path, one_size) is None  # a single x value is no curve
    no_x = _doc([_row("a", {"network": n}, 1.0) for n in ("ring:4", "switch:4")], ["network"])
    assert auto_plot(tmp_path, no_x) is None
    assert list(tmp_path.iterdir()) == []

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("renderer exploded")

    monkeypatch.setattr(_plot, "_render", boom)
    assert auto_plot(tmp_path, size_network_doc()) is None
    assert capsys.readouterr().err == "warning: could not plot results: RuntimeError: renderer exploded\n"


def test_a_plot_error_while_the_run_is_interrupted_is_the_interrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A signal that lands inside matplotlib's import leaves it half imported; the error that follows
    # must surface as the interrupt, so the CLI's first line stays "error: interrupted".
    def half_imported(*_a: Any, **_k: Any) -> None:
        raise AttributeError("module 'matplotlib' has no attribute 'get_data_path'")

    monkeypatch.setattr(_plot, "_render", half_imported)
    with pytest.raises(KeyboardInterrupt):
        auto_plot(tmp_path, size_network_doc(), stopping=lambda: True)
    assert capsys.readouterr().err == ""


SMALL = """\
version: 1
name: small
matrix:
  size: [4KiB, 64KiB]
  network: ["ring:4", "switch:4"]
sources:
  ring: {producer: hub.ring, params: {collective: allreduce, ranks: 4}}
  direct: {producer: hub.direct, params: {collective: allreduce, ranks: 4}}
consumers:
  sim: {use: hub.simulate, params: {network: "${network}", size: "${size}"}}
"""


def test_runner_writes_results_png_and_survives_plot_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = run_pipeline_text(SMALL, tmp_path / "run", jobs=1)
    assert run.plot == run.run_dir / "results.png" and run.document["plot"] == str(run.plot)
    assert run.plot.read_bytes()[:8] == PNG_MAGIC
    off = run_pipeline_text(SMALL, tmp_path / "off", jobs=1, plot=False)
    assert off.plot is None and not (off.run_dir / "results.png").exists()

    def boom(*_a: Any, **_k: Any) -> None:
        raise RuntimeError("renderer exploded")

    monkeypatch.setattr(_plot, "_render", boom)
    broken = run_pipeline_text(SMALL, tmp_path / "broken", jobs=1)
    assert broken.ok and broken.plot is None and (broken.run_dir / "results.json").exists()
    assert not (broken.run_dir / "results.png").exists()


def collhub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_cli_run_prints_plot_and_plot_command(tmp_path: Path) -> None:
    f = tmp_path / "small.yaml"
    f.write_text(SMALL)
    proc = collhub("run", str(f), "--out", "r", "--jobs", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "r"
    assert f"plot: {run_dir / 'results.png'}" in proc.stderr.splitlines()
    assert (run_dir / "results.png").read_bytes()[:8] == PNG_MAGIC

    proc = collhub("pipeline", "plot", "r", "--metric", "time_us", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(Path("r") / "results-time_us.png")
    assert (run_dir / "results-time_us.png").read_bytes()[:8] == PNG_MAGIC

    proc = collhub(
        "pipeline",
        "plot",
        "r/results.json",
        "--out",
        "algbw.png",
        "--metric",
        "algbw_GBps",
        "--x",
        "size",
        "--panel",
        "network",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "algbw.png").read_bytes()[:8] == PNG_MAGIC

    proc = collhub("pipeline", "plot", "r", "--panel", "none", "--out", "one.png", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "one.png").read_bytes()[:8] == PNG_MAGIC

    proc = collhub("pipeline", "plot", "r", "--metric", "busbw", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert lines[0] == f"error: {Path('r') / 'results.json'}: no successful row has the metric 'busbw'"
    assert lines[1].startswith("hint: did you mean busbw_GBps?")


def test_a_series_that_would_lie_flat_on_zero_gets_a_log_axis() -> None:
    # measured gloo (~0.5 GB/s) beside simulated links (~50 GB/s): on a linear axis the measured
    # line is a flat line at zero; a log axis shows both
    rows = [_row("measured", {"size": s}, 0.4 + i / 10) for i, s in enumerate(("64KiB", "1MiB"))]
    rows += [_row("simulated", {"size": s}, 40.0 + i) for i, s in enumerate(("64KiB", "1MiB"))]
    assert plot_layout(_doc(rows, ["size"])).y_scale == "log"
    close = [_row("a", {"size": "1MiB"}, 10.0), _row("b", {"size": "1MiB"}, 30.0)]
    assert plot_layout(_doc(close, ["size"])).y_scale == "linear"  # comparable heights stay linear
