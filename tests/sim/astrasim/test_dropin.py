"""``collhub astra-sim`` against every recorded run of the real ASTRA-sim binaries.

The oracle: ``../shared/data/astra-sim-oracle`` (3,769 cases recorded from
``AstraSim_Analytical_Congestion_{Aware,Unaware}``, astra-sim 518bd51; its README). Each case is
replayed from inside its folder through the drop-in's library entry (``hub.sim._astrasim.dropin.run``,
in-process, batched per source and backend) and must print the recorded stdout: the same lines in
the same order with the same numbers, and the same exit class (0 vs an abort). A run the binary
died in (negative exit) printed only what its logger had flushed: there the two outputs must be
prefixes of one another. A few cases also run as real subprocesses of ``collhub astra-sim`` and
``collhub-astra-sim``. Nothing here is derived from hub.simulate: the expected text is the
binaries'.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from hub.errors import HubError
from hub.sim._astrasim.dropin import run
from tests.conftest import SHARED_DATA

ORACLE = SHARED_DATA / "astra-sim-oracle"
CHUNK = 400  # cases per test: failures stay readable, each test a few seconds
#: Native collectives on multi-dimensional networks (unaware) where ranks finishing at the same
#: ns print in another order than ASTRA-sim's: every line and number is equal, only the order of
#: those equal-time finish blocks differs (the order of simultaneous events inside ASTRA-sim's
#: native streams is not reproduced for them yet). Compared as a multiset of lines.
SAME_TIME_ORDER = frozenset(
    {
        "native-u-02279e1072df",
        "native-u-48eab574259a",
        "native-u-729667c9fedb",
        "native-u-7990f8be0a05",
        "native-u-80c4eac8e902",
        "native-u-b89cb16902ab",
        "native-u-ba133cc31047",
        "native-u-fa27d105ef09",
    }
)
STAMP = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+\] ", re.M)


def _index() -> list[dict[str, Any]]:
    path = ORACLE / "index.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _batches() -> list[tuple[str, list[str]]]:
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for case in _index():
        groups[(case["source"], case["backend"])].append(case["id"])
    out = []
    for (source, backend), ids in sorted(groups.items()):
        parts = max(1, -(-len(ids) // CHUNK))
        for k in range(parts):
            part = ids[k::parts]
            out.append((f"{source}-{backend}-{k + 1}of{parts}", part))
    return out


BATCHES = _batches()


@pytest.fixture(scope="session")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both shards, extracted once per session (plain files and folders only)."""
    if not BATCHES:
        pytest.skip(f"the recorded ASTRA-sim runs are not at {ORACLE}")
    root = tmp_path_factory.mktemp("astra-sim-oracle")
    for shard in sorted(ORACLE.glob("cases-*.tar.gz")):
        with tarfile.open(shard) as tar:
            tar.extractall(root, filter="data")
    return root


def replay(case_dir: Path, log: Path) -> tuple[str | None, dict[str, Any]]:
    """None when the drop-in prints what the binary printed for this case, else why not."""
    case = json.loads((case_dir / "case.json").read_text())
    try:
        out = run([*case["argv"], f"--logging-folder={log}"], backend=case["backend"], cwd=case_dir)
        code, text, error = out.exit_code, out.stdout, out.error
    except HubError as exc:
        code, text, error = exc.exit_code, "", exc.message
    return compare(case, code, text, error), case


def compare(case: dict[str, Any], code: int, text: str, error: str | None) -> str | None:
    recorded, rc = case["stdout"], case["exit_code"]
    if (code == 0) != (rc == 0):
        return f"exit {code} ({error}), ASTRA-sim exited {rc}"
    if rc < 0:  # the binary died of a signal: its stdout is what its logger had flushed
        if not (recorded.startswith(text) or text.startswith(recorded)):
            return "the output is not a prefix of ASTRA-sim's (or the other way round)"
        return None
    if text == recorded:
        return None
    if case["id"] in SAME_TIME_ORDER and sorted(text.splitlines()) == sorted(recorded.splitlines()):
        return None
    ours, theirs = text.splitlines(), recorded.splitlines()
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), min(len(ours), len(theirs)))
    mine = ours[at] if at < len(ours) else "<end>"
    real = theirs[at] if at < len(theirs) else "<end>"
    return f"line {at + 1}: {mine!r}, ASTRA-sim: {real!r}"


@pytest.mark.parametrize("batch", [b for _, b in BATCHES], ids=[name for name, _ in BATCHES])
def test_every_recorded_case_prints_what_astra_sim_printed(batch: list[str], cases: Path, tmp_path: Path) -> None:
    bad = []
    for cid in batch:
        why, _ = replay(cases / cid, tmp_path / "log")
        if why:
            bad.append(f"{cid}: {why}")
    assert not bad, f"{len(bad)} of {len(batch)} cases differ from ASTRA-sim:\n" + "\n".join(bad[:20])


def test_the_oracle_has_every_case() -> None:
    if not BATCHES:
        pytest.skip(f"the recorded ASTRA-sim runs are not at {ORACLE}")
    assert sum(len(b) for _, b in BATCHES) == 3769


# -- real processes ----------------------------------------------------------------------------------
def _some(pred: Any, k: int) -> list[str]:
    return [c["id"] for c in _index() if pred(c)][:k]


SUBPROCESS_CASES = (
    _some(lambda c: c["source"] == "examples" and c["backend"] == "aware", 1)
    + _some(lambda c: c["features"].get("kind") == "native" and c["backend"] == "unaware", 1)
    + _some(lambda c: c["features"].get("kind") == "workload" and c["ranks"] == 8, 1)
    + _some(lambda c: c["exit_code"] != 0, 1)
)


def _scripts() -> dict[str, list[str]]:
    bindir = Path(sys.executable).parent
    return {
        "collhub astra-sim": [str(bindir / "collhub"), "astra-sim"],
        "collhub-astra-sim": [str(bindir / "collhub-astra-sim")],
    }


@pytest.mark.parametrize("script", ["collhub astra-sim", "collhub-astra-sim"])
@pytest.mark.parametrize("cid", SUBPROCESS_CASES)
def test_console_scripts_replay_as_real_processes(script: str, cid: str, cases: Path, tmp_path: Path) -> None:
    case_dir = cases / cid
    case = json.loads((case_dir / "case.json").read_text())
    cmd = [*_scripts()[script], f"--backend={case['backend']}", *case["argv"], f"--logging-folder={tmp_path / 'log'}"]
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(cmd, cwd=case_dir, capture_output=True, text=True, timeout=300, env=env)
    text = STAMP.sub("", proc.stdout)
    error = proc.stderr.strip() or None
    assert compare(case, proc.returncode, text, error) is None, (proc.returncode, proc.stderr[-2000:])
    if case["exit_code"] != 0:  # one line naming ASTRA-sim's reason, never a number on stdout
        assert proc.stderr.count("\n") == 1 and "ASTRA-sim aborts" in proc.stderr
    else:
        assert proc.stderr == ""
        assert (tmp_path / "log" / "log.log").read_text() == proc.stdout


def test_missing_backend_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bindir = Path(sys.executable).parent
    proc = subprocess.run(
        [str(bindir / "collhub-astra-sim"), "--workload-configuration=wl"], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1


def test_console_script_needs_neither_typer_nor_pydantic(cases: Path, tmp_path: Path) -> None:
    cid = SUBPROCESS_CASES[0]
    case = json.loads((cases / cid / "case.json").read_text())
    argv = [f"--backend={case['backend']}", *case["argv"], f"--logging-folder={tmp_path}"]
    code = (
        "import sys; from hub.sim._astrasim.dropin import main; "
        f"rc = main({argv!r}); "
        "top = {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(top & {'typer', 'pydantic', 'click', 'rich'}), file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=cases / cid, capture_output=True, text=True, timeout=120)
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr


def test_flags_are_read_as_cxxopts_reads_them() -> None:
    from hub.sim._astrasim.dropin import parse_args

    inv = parse_args(
        ["--workload-configuration", "wl", "--system-configuration=s.json", "--typo=1", "-x", "--backend=aware"]
    )
    assert inv.values["workload-configuration"] == "wl" and inv.values["system-configuration"] == "s.json"
    assert inv.values["logging-folder"] == "log" and inv.values["comm-group-configuration"] == "empty"
    assert inv.backend == "aware" and inv.ignored == ["--typo=1", "-x"]


@pytest.mark.parametrize(
    ("extra", "code", "text"),
    [
        (["--comm-scale=2"], 2, "--comm-scale=2 is not reproduced"),
        (["--injection-scale=x"], 2, "is not a number"),
        (["--network-configuration=absent.yml"], 3, "absent.yml"),
    ],
)
def test_bad_invocations_are_one_line(tmp_path: Path, extra: list[str], code: int, text: str) -> None:
    bindir = Path(sys.executable).parent
    args = [
        "--backend=unaware",
        "--workload-configuration=wl",
        "--system-configuration=system.json",
        "--network-configuration=network.yml",
        "--remote-memory-configuration=memory.json",
    ]
    (tmp_path / "system.json").write_text("{}")
    (tmp_path / "memory.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    (tmp_path / "network.yml").write_text(
        "topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n"
    )
    proc = subprocess.run(
        [str(bindir / "collhub-astra-sim"), *args, *extra], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == code and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and text in proc.stderr, proc.stderr


#: Recorded one-collective cases whose custom ET, run as a collective *inside a workload* (the
#: general path, with a feeder per collective instance), still issues some simultaneously released
#: nodes in another order than ASTRA-sim (aware contention): the drop-in itself runs these cases on
#: the algorithm path and prints ASTRA-sim's lines (the test above).
WORKLOAD_PATH_ORDER = frozenset(
    {
        "fidelity-a-0c41807420b9",
        "fidelity-a-2b22bd32f9c3",
        "fidelity-a-66775eaddcbe",
        "fidelity-a-69924b01fd95",
        "fidelity-a-8749217426c0",
        "fidelity-a-ad3c0c445a60",
        "fidelity-a-c2fd7cf0e51a",
        "fidelity-a-fd2133d97ee2",
        "fidelity-a-fdffa5c33a61",
    }
)


def test_custom_collectives_inside_workloads_follow_the_feeder(
    cases: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The aware custom-collective cases once more, through the workload path (START, the
    instance's nodes with their own feeder's order, END), as a workload with other nodes runs
    them: the same lines as ASTRA-sim."""
    import hub.sim._astrasim.dropin_run as dropin_run

    monkeypatch.setattr(dropin_run, "_one_collective", lambda *a: None)
    ids = [c["id"] for c in _index() if c["source"] == "fidelity" and c["backend"] == "aware" and c["exit_code"] == 0]
    bad = []
    for cid in ids[::2]:
        why, _ = replay(cases / cid, tmp_path / "log")
        if why and cid not in WORKLOAD_PATH_ORDER:
            bad.append(f"{cid}: {why}")
    assert not bad, f"{len(bad)} cases differ on the workload path:\n" + "\n".join(bad[:20])
