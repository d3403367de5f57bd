"""One unreadable page or daily log is a warning naming it, never the failure of a command.

The files are made unreadable with ``chmod 000``. Root reads them anyway, so when the tests run
as root the commands run in a child process whose capability bounding set lacks
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (dropped with ``prctl`` just before ``exec``): the child
is still root, but file permissions apply to it."""

import ctypes
import json
import os
import subprocess
import sys
from datetime import UTC, date, datetime

import pytest

from memory_assets.cli import main
from memory_assets.core.index.indexer import Indexer
from memory_assets.core.models.embedder import Embedder
from memory_assets.core.settings import Settings
from memory_assets_tests.conftest import DAY, write_facts

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2
DAY2 = date(2026, 11, 21)

CHILD = """
import contextlib, io, json, logging, sys
from memory_assets.cli import main
logged = []
class Keep(logging.Handler):
    def emit(self, record):
        logged.append(record.getMessage())
logging.getLogger("memory_assets").addHandler(Keep())
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    logged.clear()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    results.append({"code": code, "out": out.getvalue(), "err": err.getvalue() + "\\n".join(logged)})
print(json.dumps(results))
"""


def _without_dac_override() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_unprivileged(commands: list[list[str]]) -> list[dict[str, object]]:
    """The CLI ``commands`` in one child process that file permissions apply to."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_without_dac_override if os.geteuid() == 0 else None,
        env=dict(os.environ),
    )
    if "prctl(PR_CAPBSET_DROP)" in done.stderr:
        pytest.skip("running as root without CAP_SETPCAP: cannot make a file unreadable to this test")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_unreadable_pages_and_logs_are_warnings_and_keep_their_rows(
    settings: Settings, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    today = datetime.now(UTC).date()
    write_facts(settings, DAY, "Keeps bees on the roof of the flat", "Prefers metric units in all answers")
    write_facts(settings, DAY2, "Learns the cello on Tuesday evenings")
    write_facts(settings, today, "Drinks green tea every afternoon")
    notes = settings.notebook_dir / "2_Wiki" / "Concepts" / "Notes.md"
    notes.write_text("# Notes\n\nQuillfeather pens are the best for sketching.\n")
    Indexer(settings, embedder=embedder).sweep()
    day2_log = settings.archive_dir / f"{DAY2}.md"
    today_log = settings.archive_dir / f"{today}.md"
    unreadable = [notes, day2_log, today_log]
    for path in unreadable:
        path.chmod(0)
    try:
        home = ["--home", str(settings.home), "--json"]
        status, reindex, check, reconcile, dream = run_unprivileged(
            [
                [*home, "status"],
                [*home, "reindex"],
                [*home, "check"],
                [*home, "reconcile"],
                [*home, "dream", "--force"],
            ]
        )
    finally:
        for path in unreadable:
            path.chmod(0o644)
    assert [r["code"] for r in (status, reindex, check, reconcile, dream)] == [0, 0, 0, 0, 0]
    for name in ("notebook/2_Wiki/Concepts/Notes.md", f"archive/{DAY2}.md", f"archive/{today}.md"):
        assert (
            f"{name}: cannot be read (Permission denied); its index rows are left as they were"
            in reindex["err"]
        )
    assert "make the file readable" in reindex["err"]
    outcomes = {o["name"]: o for o in json.loads(check["out"])}
    assert outcomes["logs_append_only"]["severity"] == "warn"
    assert f"{DAY2}.md: cannot be read" in outcomes["logs_append_only"]["problems"][0]
    assert outcomes["rows_match_logs"]["passed"]
    assert any(f"archive/{today}.md: cannot be read" in w for w in outcomes["rows_match_logs"]["warnings"])
    # The dream folds the day it can read and leaves the unreadable one for a later run, saying so.
    [run] = json.loads(dream["out"])["runs"]
    assert run["ok"] and run["days"] == [DAY.isoformat()] and run["folded"] == 2
    assert any(
        w.startswith(f"archive/{DAY2}.md: cannot be read") and "make the file readable" in w
        for w in run["warnings"]
    )

    # Every fact of the unreadable files is still in the index: the dream read none of their lines.
    for words in ("Learns the cello", "Drinks green tea", "Quillfeather pens"):
        assert main(["--home", str(settings.home), "--json", "search", words, "--no-embed"]) == 0
        assert any(words in h["content"] for h in json.loads(capsys.readouterr().out)), words
    assert f"watermark={DAY.isoformat()}" in settings.log_md.read_text()
    assert f"{DAY2}.md" not in settings.folds_path.read_text()
