"""Parsing ASTRA-sim's report lines (format: astra-sim.md §8)."""

from __future__ import annotations

from collhub_astrasim import parse_output

# Interleaved as a multi-rank run prints it, with a compute statistic and unrelated lines.
OUTPUT = """\
[2025-06-10 10:00:00.001] [workload] [info] Workload file: workload/workload.1.et
[2025-06-10 10:00:00.120] [workload] [info] sys[1] finished, 150000 cycles, exposed communication 90000 cycles.
[2025-06-10 10:00:00.121] [workload] [info] sys[0] finished, 150321 cycles, exposed communication 90174 cycles.
[2025-06-10 10:00:00.122] [statistics] [info] sys[0]. Post statistics processing start.
[2025-06-10 10:00:00.122] [statistics] [info] sys[0]. Post statistics processing end.
[2025-06-10 10:00:00.122] [statistics] [info] sys[0], Wall time: 150321
[2025-06-10 10:00:00.122] [statistics] [info] sys[0], GPU time: 60147
[2025-06-10 10:00:00.122] [statistics] [info] sys[0], Comm time: 90174
[2025-06-10 10:00:00.123] [statistics] [info] sys[1], Wall time: 150000
[2025-06-10 10:00:00.123] [statistics] [info] sys[1], Comm time: 90000
"""


def test_parse_interleaved_report() -> None:
    report = parse_output(OUTPUT)
    assert report.time_ns == 150321 and report.exposed_comm_ns == 90174
    assert report.per_rank() == [150321, 150000]
    assert report.per_rank("exposed_comm_ns") == [90174, 90000]
    assert report.per_rank("wall_ns") == [150321, 150000]
    assert report.per_rank("gpu_ns") == [60147, None]
    assert report.per_rank("comm_ns") == [90174, 90000]


def test_nothing_to_parse() -> None:
    assert parse_output("Segmentation fault\n").ranks == {}
