"""``memory-assets``: the command line over the same core the Dagster assets call.

    memory-assets [--home PATH] [--profile default|suzent] [--json] COMMAND [--json]

Each command parses its arguments, makes one call into the core (``Home``, ``core.ops``, the
runners) and prints what it returned, as text or, with ``--json``, as one JSON document. A
``SettingsError`` or another refusal is printed to stderr with exit status 2; a check or a run
that failed exits 1. The commands, their options and their output are in
docs/reference/cli.md (memory_assets_tests/test_docs.py fails when a command or an option is
missing there) and in ``memory-assets COMMAND --help``.
"""

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_assets.core.settings import PROFILES, Settings, SettingsError, quiet_native_logs
from memory_assets.core.text import excerpt

if TYPE_CHECKING:  # the parts load lancedb and polars: imported where a command needs them
    from memory_assets.core.home import Home
    from memory_assets.core.ops.forget import Target

quiet_native_logs()


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.load(args.home, args.profile)


def _home(args: argparse.Namespace) -> "Home":
    """The home of ``--home`` / ``--profile``, once it is initialised (else the error naming the fix)."""
    from memory_assets.core.home import Home

    return Home(_settings(args)).ready()


def cmd_init(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.status import init_home

    settings = _settings(args)
    created = init_home(settings)
    return {"home": str(settings.home), "created": [str(p) for p in created]}


def cmd_reindex(args: argparse.Namespace) -> dict[str, Any]:
    result = _home(args).indexer.sweep(full=args.full, rebuild=args.rebuild)
    for warning in result.warnings:
        logging.getLogger("memory_assets").warning(warning)
    summary = result.summary()
    summary.pop("warnings")
    summary["warnings"] = len(result.warnings)
    return summary


def _hit_dict(hit: Any, context: bool = False) -> dict[str, Any]:
    keys = (
        "id",
        "content",
        "score",
        "source_type",
        "source_file",
        "source_date",
        "importance",
        "duplicates",
        "truncated",
    )
    out = {k: getattr(hit, k) for k in keys}
    if context:  # --context N: the hit's neighbouring lines, each scored as a hit would be
        out["context"] = [
            {"id": c.id, "content": c.content, "score": c.score, "offset": c.offset, "truncated": c.truncated}
            for c in hit.context
        ]
    return out


def cmd_migrate(args: argparse.Namespace) -> dict[str, Any]:
    indexer = _home(args).indexer_without_embedder()
    if not indexer.store.exists():
        return {"migrated": False, "reason": "no index table yet: nothing to migrate"}
    before = indexer.store.version()
    migrated = indexer.migrate()
    stats = indexer.store.stats()
    return {"migrated": migrated, "version_before": before, "version": stats.version, "rows": stats.rows}


def cmd_optimize(args: argparse.Namespace) -> dict[str, Any]:
    indexer = _home(args).indexer_without_embedder()
    if not indexer.store.exists():
        return {"optimized": False, "reason": "no index table yet: run `memory-assets reindex`"}
    indexer.store.require_current("optimize")
    return {"optimized": True, **indexer.optimize().to_dict()}


def cmd_search(args: argparse.Namespace) -> Any:
    from memory_assets.core.search.filters import SearchFilters

    home = _home(args)
    # The flags' one translation (flag -> SearchFilters field): --limit -> limit, --source-type
    # (repeatable) -> source_types, --since -> since, --until -> until, --context -> context.
    filters = SearchFilters(
        limit=args.limit,
        source_types=args.source_type,
        since=args.since,
        until=args.until,
        context=args.context,
    )

    def run(query: str) -> list[dict[str, Any]]:
        hits = home.search(query, filters, embed=not args.no_embed)
        out = [_hit_dict(h, context=filters.context > 0) for h in hits]
        if args.explain:  # where each hit came from, back to what was said (core/index/lineage.py)
            found = home.lineage([h.id for h in hits])
            for hit in out:
                lineage = found.get(hit["id"])
                hit["lineage"] = lineage.to_dict() if lineage is not None else None
        return out

    if args.queries_file:
        path = Path(args.queries_file)
        if not path.is_file():
            raise SettingsError(f"--queries-file {path}: no such file")
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip():
                print(json.dumps(run(line.strip()), ensure_ascii=False), flush=True)
        return None
    if not args.query:
        raise SettingsError("search needs a QUERY or --queries-file FILE")
    return run(args.query)


def cmd_status(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.status import home_status

    home = _home(args)
    return home_status(home.settings, home.store)


def cmd_dedup_report(args: argparse.Namespace) -> Any:
    from memory_assets.core.ops.dedup_report import measure_dedup

    done = measure_dedup(
        _home(args), "cli", report=bool(args.html), html=Path(args.html) if args.html else None
    )
    measurement, paths = done.measurement, done.paths
    if args.html:
        paths["html"] = done.html
    if args.json:
        return {**measurement.report, "html": str(paths["html"])} if args.html else measurement.report
    print(measurement.markdown)
    print("files: " + ", ".join(str(p) for p in paths.values()))
    return None


def cmd_check(args: argparse.Namespace) -> int:
    """Run every invariant check; print them (or a JSON list); the exit status is 1 when a check
    of error severity failed. Prints its own output and returns the exit status."""
    from memory_assets.core.ops.check import accept_logs, check_home

    home = _home(args)
    if args.accept_log:
        for name in accept_logs(home, args.accept_log):
            print(f"accepted archive/{name} as it is now: the ledger's new record", file=sys.stderr)
    outcomes = check_home(home)
    if args.json:
        print(json.dumps([o.to_dict() for o in outcomes], ensure_ascii=False))
    else:
        for o in outcomes:
            status = "passed" if o.passed else ("FAILED" if o.severity == "error" else "WARNING")
            print(f"{status:7} {o.name}: {o.summary}")
            for problem in o.problems:
                print(f"        {problem}")
            for warning in o.warnings:
                print(f"        warning: {warning}")
    return 1 if any(o.blocking for o in outcomes) else 0


def cmd_memory_md(args: argparse.Namespace) -> Any:
    """``memory-md show`` prints MEMORY.md's zones; ``memory-md edit`` is a person's edit: the manual
    zone becomes the given text under a fresh ``verified: human:<id>`` stamp (generated zone kept)."""
    from memory_assets.core.ops.memory_md import edit_memory_md, memory_md_zones

    home = _home(args)
    if args.md_action == "edit":
        text = args.text
        if args.file:
            source = Path(args.file)
            if not source.is_file():
                raise SettingsError(f"--file {source}: no such file")
            text = source.read_text(encoding="utf-8")
        return edit_memory_md(home, text, args.who).to_dict()
    view = memory_md_zones(home)
    if args.json:
        return view.to_dict()
    print(f"{view.path}: {view.layout_note}")
    if view.generated is not None:
        print("--- generated zone ---")
        print(view.generated.strip("\r\n"))
    stamps = ", ".join(f"human:{s['who']} at {s['at']}" for s in view.stamps) or "not verified by a person"
    print(f"--- manual zone ({stamps}) ---")
    print(view.manual.strip("\r\n"))
    return None


def cmd_write_turn(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.write import write_turn

    return write_turn(_home(args), args.user, args.assistant or "", args.chat_id, args.at).summary()


def cmd_remember(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.write import add_memory

    result = add_memory(
        _home(args),
        args.text,
        category=args.category,
        importance=args.importance,
        chat_id=args.chat_id,
        at=args.at,
    )
    return result.summary()


def cmd_ingest_transcripts(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.write import ingest

    result = ingest(_home(args), sessions=set(args.session) if args.session else None, limit=args.limit)
    for warning in result.warnings:
        logging.getLogger("memory_assets").warning(warning)
    return result.summary()


def cmd_dream(args: argparse.Namespace) -> Any:
    """Prints its result; exits 1 when a dream run failed or the reconcile after it did."""
    from memory_assets.core.ops.dream import dream_preview, dream_then_reconcile

    home = _home(args)
    ticks = 1000 if args.all else 1
    if args.dry_run:
        preview = dream_preview(home, ticks=ticks, force=args.force, lint_only=args.lint)
        runs = [r.to_dict() for r in preview.results]
        if args.json:
            return {
                "dry_run": True,
                "runs": runs,
                "files_changed": preview.files_changed,
                "diff": preview.diff,
            }
        print(preview.diff or "(no change to the vault)", end="" if preview.diff.endswith("\n") else "\n")
        for run in runs:
            print(
                f"# {run['kind']}: {run['summary'] or run['reason']} (days {', '.join(run['days']) or '-'})"
            )
        print(f"# dry run: {len(preview.files_changed)} vault file(s) would change; the home was not touched")
        return None
    out = dream_then_reconcile(home, ticks=ticks, force=args.force, lint_only=args.lint)
    _print_result(args, out)
    # A failed run (ok: false) or a failed reconcile exits 1, so cron and scripts can tell.
    failed = any(not run["ok"] for run in out["runs"]) or "error" in out.get("reindex", {})
    return 1 if failed else 0


def cmd_reconcile(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.dream import reconcile_home

    return reconcile_home(_home(args)).to_dict()


def cmd_upkeep(args: argparse.Namespace) -> Any:
    """The look, then (without ``--dry-run``) the day's work; exit 1 when a step failed or
    another upkeep held the home."""
    from memory_assets.core.home import Home
    from memory_assets.core.ops.upkeep.one_home import look_now, upkeep_now
    from memory_assets.core.ops.users import open_user_home, resolve_root

    if bool(args.root) and not args.user:
        raise SettingsError("upkeep --root DIR needs --user ID: the user whose home to keep")
    root = resolve_root(args.root) if args.user else None
    home = open_user_home(root, args.user) if root is not None else Home(_settings(args)).ready()
    look = look_now(home, root, args.user)
    out: dict[str, Any] = {"home": str(home.settings.home), "dry_run": args.dry_run, "look": look.to_dict()}
    if not args.dry_run:
        done = upkeep_now(home, look, root, args.user)
        out["steps"] = [
            {"step": s.step, "ok": s.ok, "error": s.error, "seconds": s.seconds} for s in done.steps
        ]
        out |= {"ok": done.ok, "skipped": done.skipped, "error": done.error}
        out["outcome"] = done.outcome.to_dict() if done.outcome is not None else None
    if args.json:
        _print_result(args, out)
    else:
        print(f"home: {out['home']}")
        print("\n".join(f"needs {line}" if line != "nothing to do" else line for line in look.lines()))
        if args.dry_run:
            print("# dry run: nothing was done")
        for step in out.get("steps", []):
            state = "ok" if step["ok"] else f"failed: {step['error']}"
            print(f"{step['step']}: {state} ({step['seconds']:.2f} s)")
        for why in ("skipped", "error"):
            if out.get(why):
                print(f"nothing was done: {out[why]}")
        if out.get("outcome") is not None:
            print(f"outcome recorded at the root: {'ok' if out['outcome']['ok'] else 'failed'}")
    return 0 if args.dry_run or out["ok"] else 1


def cmd_restore_stranded(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.restore import restore_stranded

    return restore_stranded(_home(args).indexer, dry_run=args.dry_run).to_dict()


def cmd_forget(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.forget import forget

    given = [n for n in ("text", "id", "chat", "day") if getattr(args, n)]
    if len(given) != 1:
        raise SettingsError("forget needs exactly one of TEXT, --id ROW_ID, --chat ID and --day YYYY-MM-DD")
    return forget(_home(args), _target(args), force=args.force)


def cmd_erase(args: argparse.Namespace) -> Any:
    from memory_assets.core.ops.forget import erase, resume_erase

    if args.all:
        return _erase_all(args)
    if args.root or args.user:
        raise SettingsError("erase --root and --user go with --all: the whole home of that user")
    home = _home(args)
    if args.resume:
        return resume_erase(home) or {"resumed": None, "note": "no unfinished erase"}
    given = [n for n in ("text", "id", "chat", "day") if getattr(args, n)]
    if len(given) != 1:
        raise SettingsError("erase needs exactly one of TEXT, --id ROW_ID, --chat ID and --day YYYY-MM-DD")
    if args.force and not args.yes:
        raise SettingsError(
            "erase --force goes with --yes: run it first without either to see what it would remove"
        )
    return erase(home, _target(args), confirm=args.yes, force=args.force)


def _target(args: argparse.Namespace) -> "Target":
    """The ``Target`` of ``forget`` / ``erase``: TEXT, ``--id``, ``--chat`` or ``--day``."""
    from memory_assets.core.ops.forget import Target

    return Target(text=args.text, row_id=args.id, chat=args.chat, day=args.day)


def cmd_unforget(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.forget import unforget

    if sum(bool(getattr(args, n)) for n in ("text", "chat", "day")) != 1:
        raise SettingsError("unforget needs exactly one of TEXT, --chat ID and --day YYYY-MM-DD")
    return unforget(_home(args), args.text, chat=args.chat, day=args.day)


def _erase_all(args: argparse.Namespace) -> Any:
    """``erase --all``: delete the whole home (a user's, and its traces at the root); without
    ``--yes`` print what would go and change nothing."""
    from memory_assets.core.ops.delete_user import delete, home_target, plan, user_target
    from memory_assets.core.ops.users import UnknownUserError, resolve_root

    if any(getattr(args, n) for n in ("text", "id", "chat", "day", "force", "resume")):
        raise SettingsError(
            "erase --all takes no TEXT, --id, --chat, --day, --force or --resume: it deletes the whole home"
        )
    if args.user:
        target = user_target(resolve_root(args.root), args.user)
    elif args.root:
        raise SettingsError("erase --all --root DIR needs --user ID: the user whose home goes")
    else:
        target = home_target(_settings(args))
    try:
        if args.yes:
            return delete(target, holder=f"memory-assets erase --all (pid {os.getpid()})")
        counted = plan(target)
    except UnknownUserError as exc:  # nothing of the user to delete: an error naming whose
        raise SettingsError(str(exc)) from None
    if args.json:
        return {"deleted": False, "would_remove": counted.to_dict()}
    print(f"would delete {counted.describe()}")
    print("nothing was changed: run it again with --yes to delete (irreversible)")
    return 0


def cmd_legacy_check(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.legacy import legacy_report

    return legacy_report(_home(args), args.table)


def cmd_legacy_export(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.legacy import export_legacy

    return export_legacy(_home(args), args.table).to_dict()


def cmd_legacy_apply(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.legacy import apply_legacy

    return apply_legacy(_home(args), args.table, confirm=args.yes).to_dict()


def cmd_legacy_restore(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.legacy import restore_legacy

    return restore_legacy(_home(args), args.backup, args.table).to_dict()


def cmd_legacy_forget_backup(args: argparse.Namespace) -> dict[str, Any]:
    from memory_assets.core.ops.legacy import forget_legacy_backup

    return forget_legacy_backup(_home(args), args.backup, args.table, remove_copy=args.remove_copy)


def _server_config(args: argparse.Namespace) -> Any:
    from memory_assets.server.config import ServerConfig

    return ServerConfig.load(
        root=args.root,
        host=getattr(args, "host", None),
        port=getattr(args, "port", None),
        tokens_file=getattr(args, "tokens_file", None),
    )


def cmd_serve(args: argparse.Namespace) -> int:
    """Runs until stopped (SIGTERM, Ctrl-C); prints its own output."""
    from memory_assets.server.run import serve

    serve(_server_config(args))
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """MCP over stdio for one user until stdin closes; only the protocol goes to stdout."""
    from memory_assets.server.run import run_stdio

    run_stdio(_server_config(args), args.user)
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    """Adds a new token's hash to the token file and prints the token (once) on stdout."""
    from memory_assets.server.auth import add_token

    token = add_token(Path(args.tokens_file).expanduser().absolute(), args.user, admin=args.admin)
    who = "admin" if args.admin else f"user {args.user}"
    print(f"added a token for {who} to {args.tokens_file}; it is shown only now:", file=sys.stderr)
    print(token)
    return 0


def cmd_dagster_yaml(args: argparse.Namespace) -> int:
    """Prints the file, or writes it (atomically) to ``--out``."""
    from memory_assets.core.durable import write_atomic
    from memory_assets.defs.instance import InstanceConfig, instance_yaml

    text = instance_yaml(InstanceConfig(args.storage, args.max_concurrent_runs))
    if args.out is None:
        sys.stdout.write(text)
        return 0
    out = Path(args.out).expanduser().absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text)
    print(f"wrote {out} ({args.storage} storage)", file=sys.stderr)
    return 0


AT_FORMAT = "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM]"


def _utc(text: str) -> Any:
    """An ``--at`` value: an ISO date or date-time, read as a turn's time (``turn_time``: UTC when
    it has no offset, within the years 1-9999 in UTC); anything else is an argparse error (exit 2)
    naming the expected format."""
    from datetime import datetime

    from memory_assets.core.ops.write import turn_time

    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date-time ({AT_FORMAT})") from None
    try:
        return turn_time(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is outside the years 1-9999 in UTC; give a date-time from 0001-01-01 to "
            f"9999-12-31 in UTC ({AT_FORMAT})"
        ) from None


def _print_human(result: Any) -> None:
    if isinstance(result, list):
        for i, row in enumerate(result, 1):
            when = row.get("source_date") or ""
            print(
                f"{i:2}. {row['score']:.3f}  [{row['source_type']} {row.get('source_file') or ''} {when}]".rstrip()
                + f"\n    {row['content']}"
            )
            for line in row.get("context", []):
                print(
                    f"      {'before' if line['offset'] < 0 else 'after '} {line['score']:.3f}  {line['content']}"
                )
            if "lineage" in row:
                print("\n".join(_lineage_lines(row["lineage"])))
        if not result:
            print("no results")
        return
    for key, value in result.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for item in value:
                print(f"  {item}")
        else:
            print(f"{key}: {value}")


_FOLD_STATES = {
    "pending": "no dream has read it yet",
    "left": "a dream read it, no page holds it",
    "folded": "folded into a page before the fold ledger",
}


def _lineage_lines(lineage: dict[str, Any] | None, indent: str = "    ") -> list[str]:
    """A hit's lineage (``Lineage.to_dict()``) as indented lines, the nearest source first."""
    if lineage is None:
        return [f"{indent}lineage: the row is gone (reindexed meanwhile)"]

    def turns(items: list[dict[str, Any]], at: str) -> list[str]:
        return [
            f"{at}said: transcripts/{t['transcript']} line {t['line']} (chat {t['chat']}, {t['at'] or 'undated'}):"
            f" {excerpt(t['said'], 160)}"
            for t in items
        ]

    def log_lines(items: list[dict[str, Any]], at: str) -> list[str]:
        out = []
        for line in items:
            state = f"folded into notebook/{line['page']}" if line["page"] else _FOLD_STATES[line["fold"]]
            out.append(
                f"{at}from: memory/archive/{line['file']} line {line['line']} ({state}): {line['text']}"
            )
            out += turns(line["turns"], at + "  ")
        return out

    def bullets(items: list[dict[str, Any]], at: str) -> list[str]:
        out = []
        for b in items:
            out.append(f"{at}from: notebook/{b['page']} line {b['line']}: {b['text'].strip()}")
            out += log_lines(b["log_lines"], at + "  ")
        return out

    out = log_lines(lineage["log_lines"], indent) + bullets(lineage["bullets"], indent)
    out += turns(lineage["turns"], indent)
    zone = lineage.get("zone")
    if zone:
        verified = f", verified by {', '.join(zone['verified_by'])}" if zone["verified_by"] else ""
        out.append(
            f"{indent}zone: MEMORY.md's {zone['zone']} zone, written by {zone['written_by']}{verified}"
        )
        for z in zone["lines"]:
            made = bullets(z["claims"], indent + "    ") + log_lines(z["facts"], indent + "    ")
            if made or z["rows"]:
                out.append(f"{indent}  memory/MEMORY.md line {z['line']}: {z['text'].strip()}")
                out += made
    out += [f"{indent}note: {note}" for note in lineage["notes"]]
    return out or [f"{indent}lineage: no source before this row"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-assets",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # The global options are accepted before or after the command: defined on the main parser,
    # and again on every subcommand with SUPPRESS defaults so an absent one keeps the main value.
    common = argparse.ArgumentParser(add_help=False)
    for target, default in ((parser, None), (common, argparse.SUPPRESS)):
        target.add_argument(
            "--home",
            default=default,
            help="memory home (default: $MEMORY_HOME or ./.memory_home; suzent: ~/.suzent)",
        )
        target.add_argument(
            "--profile",
            choices=PROFILES,
            default=default,
            help="directory layout (default: $MEMORY_PROFILE or default)",
        )
        target.add_argument(
            "--json", action="store_true", default=False if default is None else default, help="print JSON"
        )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, parents=[common])

    command("init", "create the memory home; never overwrites a file").set_defaults(func=cmd_init)
    p = command(
        "reindex", "bring the index in line with the markdown (migrates an assistant-era table first)"
    )
    p.add_argument(
        "--full", action="store_true", help="ignore the index state; diff every file; rebuild on model change"
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="recreate the table and embed every row again with the configured model (implies --full)",
    )
    p.set_defaults(func=cmd_reindex)
    command("migrate", "migrate an assistant-era table to this schema").set_defaults(func=cmd_migrate)
    command("optimize", "compact the table, fold new rows into its indexes, prune old versions").set_defaults(
        func=cmd_optimize
    )
    p = command("search", "hybrid search over the index")
    p.add_argument("query", nargs="?", help="what to look for")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--queries-file", help="one query a line; prints one JSON list a line")
    p.add_argument(
        "--source-type",
        action="append",
        help="archive_log, notebook, core_file, transcript, legacy_direct (repeatable)",
    )
    p.add_argument("--since", type=date.fromisoformat, help="facts on or after YYYY-MM-DD")
    p.add_argument("--until", type=date.fromisoformat, help="facts on or before YYYY-MM-DD")
    p.add_argument("--no-embed", action="store_true", help="full-text only (no model load)")
    p.add_argument(
        "--context",
        type=int,
        default=0,
        metavar="N",
        help="up to N neighbouring lines each side of a hit (same log block or page section); JSON: context",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="where each hit came from: its log line, page line or MEMORY.md zone, back to the turn it "
        "was said in; JSON: lineage",
    )
    p.set_defaults(func=cmd_search)
    command("status", "what the memory home holds").set_defaults(func=cmd_status)
    p = command(
        "dedup-report", "near-duplicate rates by write path and the on-disk backlog; writes parquet files"
    )
    p.add_argument(
        "--html",
        metavar="PATH",
        help="also write the trend over every stored measurement, the largest clusters and the paraphrase "
        "pairs as one self-contained HTML file (opens offline)",
    )
    p.set_defaults(func=cmd_dedup_report)
    p = command("check", "verify the invariants; exit 1 when one fails")
    p.add_argument(
        "--accept-log",
        action="append",
        metavar="FILE",
        help="accept a daily log's current text (an intended repair) before checking (repeatable)",
    )
    p.set_defaults(func=cmd_check)
    p = command("memory-md", "MEMORY.md: show its zones, or stamp a person's edit into the manual zone")
    actions = p.add_subparsers(dest="md_action", required=True, metavar="ACTION")
    actions.add_parser("show", help="print the generated and the manual zone", parents=[common])
    edit = actions.add_parser(
        "edit", help="replace the manual zone with your text, stamped verified: human:<id>", parents=[common]
    )
    edit.add_argument("--who", help="your plain id for the stamp (default: the home's user id)")
    given = edit.add_mutually_exclusive_group(required=True)
    given.add_argument("--text", help="the manual zone's new text")
    given.add_argument("--file", help="read the manual zone's new text from this UTF-8 file")
    p.set_defaults(func=cmd_memory_md)
    p = command("write-turn", "one conversation turn through the write path")
    p.add_argument("--user", required=True, help="what the user said")
    p.add_argument("--assistant", help="what the assistant answered (context only, never a source of facts)")
    p.add_argument(
        "--chat-id", default="cli", help="the conversation's id (its first 8 characters head the block)"
    )
    p.add_argument("--at", type=_utc, help="when the turn happened (ISO; UTC if no offset): its day's log")
    p.set_defaults(func=cmd_write_turn)
    p = command("remember", "one fact through the classifier: written, or recorded as a confirmation")
    p.add_argument("text", help="the fact, one sentence")
    p.add_argument("--category", help="personal, preference, goal, context, technical or interaction")
    p.add_argument("--importance", type=float, default=0.5, help="0-1; 0.7 or more refreshes MEMORY.md")
    p.add_argument("--chat-id", default="cli")
    p.add_argument("--at", type=_utc, help="when (ISO): its day's log")
    p.set_defaults(func=cmd_remember)
    p = command("dream", "consolidate pending days into the vault (when the pacing gates allow)")
    p.add_argument(
        "--force", action="store_true", help="ignore the time and fact gates (not retry-then-skip)"
    )
    p.add_argument("--all", action="store_true", help="repeat batches until caught up")
    p.add_argument("--lint", action="store_true", help="the editorial audit instead of an ingest")
    p.add_argument(
        "--dry-run", action="store_true", help="run on a clone of the home and print the vault's diff"
    )
    p.set_defaults(func=cmd_dream)
    command("reconcile", "retire what the dream folded, sweep, optimize").set_defaults(func=cmd_reconcile)
    p = command("upkeep", "what the home needs, then the day's work (as the Dagster upkeep batch does it)")
    p.add_argument("--dry-run", action="store_true", help="only print what the home needs; do nothing")
    p.add_argument(
        "--root", help="with --user: the root of the users' homes (default: $MEMORY_ROOT or ./.memory_root)"
    )
    p.add_argument("--user", metavar="ID", help="the user whose home to keep (under --root)")
    p.set_defaults(func=cmd_upkeep)
    p = command("restore-stranded", "make every stranded fact findable again (what `check` names)")
    p.add_argument("--dry-run", action="store_true", help="report what it would do; write nothing")
    p.set_defaults(func=cmd_restore_stranded)
    p = command(
        "forget", "hide a text from everything served: a tombstone plus a reindex of every file that holds it"
    )
    p.add_argument(
        "text",
        nargs="?",
        help="the text to forget (whole words, inside longer text too, case and spacing aside)",
    )
    p.add_argument("--id", help="forget the content of this row (ids are in `search --json`)")
    p.add_argument("--chat", help="forget a whole chat: its turns and the facts written from them")
    p.add_argument(
        "--day", type=date.fromisoformat, help="forget every turn said this day (UTC), and its facts"
    )
    p.add_argument("--force", action="store_true", help="forget a text however much of the home holds it")
    p.set_defaults(func=cmd_forget)
    p = command(
        "erase",
        "remove a text's bytes from the home, irreversibly, with a receipt (prints the plan without --yes)",
    )
    p.add_argument(
        "text", nargs="?", help="the text to erase (found inside longer text, case and spacing aside)"
    )
    p.add_argument("--id", help="erase this row's text (a turn's row: the whole turn)")
    p.add_argument("--chat", help="erase a whole chat: its turns and the facts written from them")
    p.add_argument(
        "--day", type=date.fromisoformat, help="erase a day: its log, its turns (UTC), their facts"
    )
    p.add_argument(
        "--yes", action="store_true", help="erase; without it, print what would go and change nothing"
    )
    p.add_argument(
        "--force", action="store_true", help="with --yes: erase a text however much of the home holds it"
    )
    p.add_argument("--resume", action="store_true", help="finish an erase a crash left")
    p.add_argument(
        "--all", action="store_true", help="the whole home, and every trace of its user at the root"
    )
    p.add_argument(
        "--root",
        help="with --all --user: the root of the users' homes (default: $MEMORY_ROOT or ./.memory_root)",
    )
    p.add_argument("--user", metavar="ID", help="with --all: the user whose home goes (under --root)")
    p.set_defaults(func=cmd_erase)
    p = command("unforget", "remove a text's tombstone and reindex, so its rows come back")
    p.add_argument("text", nargs="?")
    p.add_argument("--chat", help="bring back a chat forgotten with forget --chat")
    p.add_argument("--day", type=date.fromisoformat, help="bring back a day forgotten with forget --day")
    p.set_defaults(func=cmd_unforget)
    p = command("legacy", "legacy rows (no source file): check, export, then apply; restore a backup")
    actions = p.add_subparsers(dest="legacy_action", required=True, metavar="ACTION")
    table_help = "an assistant-format LanceDB (the directory holding archival_memories); default: the index"
    legacy = {
        "check": ("how many legacy rows a daily log, vault page or core file holds", cmd_legacy_check),
        "export": (
            "append every unrecorded legacy row to the daily logs (blocks to core files)",
            cmd_legacy_export,
        ),
        "apply": ("back up, then delete the legacy rows (refuses while any is unrecorded)", cmd_legacy_apply),
        "restore": ("bring the table back exactly as it was before an apply", cmd_legacy_restore),
        "forget-backup": (
            "delete a backup's tag (it blocks optimize's version cleanup)",
            cmd_legacy_forget_backup,
        ),
    }
    for name, (help_text, func) in legacy.items():
        action = actions.add_parser(name, help=help_text, parents=[common])
        if name in ("restore", "forget-backup"):
            action.add_argument(
                "backup", metavar="BACKUP", help="the backup's name (legacy-backup-...) or copy"
            )
        action.add_argument("--table", metavar="URI", help=table_help)
        if name == "apply":
            action.add_argument(
                "--yes", action="store_true", help="do it (without: only report what it would do)"
            )
        if name == "forget-backup":
            action.add_argument("--remove-copy", action="store_true", help="delete the directory copy too")
        action.set_defaults(func=func)
    root_help = "the root of the users' homes, <root>/users/<id>/ (default: $MEMORY_ROOT or ./.memory_root)"
    p = command("serve", "the memory service: REST under /v1 and MCP at /mcp, for many users")
    p.add_argument("--root", help=root_help)
    p.add_argument("--host", help="address to listen on (default: $MEMORY_SERVER_HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to listen on (default: $MEMORY_SERVER_PORT or 8765)")
    p.add_argument(
        "--tokens-file",
        help="the token file (default: $MEMORY_SERVER_TOKENS_FILE); required beyond a loopback address",
    )
    p.set_defaults(func=cmd_serve)
    p = command("mcp", "MCP over stdio for one user (a desktop client starts it)")
    p.add_argument("--root", help=root_help)
    p.add_argument("--user", default="default", help="whose memory (default: default)")
    p.set_defaults(func=cmd_mcp)
    p = command("token", "make a token for the server and add its hash to the token file")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", help="the user the token reaches")
    who.add_argument("--admin", action="store_true", help="a token that reaches every user")
    p.add_argument("--tokens-file", required=True, help="the token file (created if missing)")
    p.set_defaults(func=cmd_token)
    p = command("dagster-yaml", "write the Dagster instance's dagster.yaml (queue, limits, storage)")
    p.add_argument(
        "--storage",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="sqlite under $DAGSTER_HOME (default) or postgres (from the DAGSTER_PG_* variables)",
    )
    p.add_argument(
        "--max-concurrent-runs", type=int, default=1, metavar="N", help="runs at once (default: 1)"
    )
    p.add_argument("--out", metavar="FILE", help="write it here (default: print it)")
    p.set_defaults(func=cmd_dagster_yaml)
    p = command("ingest-transcripts", "every new user turn of the transcripts through the write path")
    p.add_argument("--session", action="append", help="only this session (repeatable)")
    p.add_argument("--limit", type=int, help="at most this many turns in this run")
    p.set_defaults(func=cmd_ingest_transcripts)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    try:
        result = args.func(args)
    except (SettingsError, OSError, RuntimeError, ValueError) as exc:
        print(f"memory-assets: error: {exc}", file=sys.stderr)
        return 2
    finally:
        # A command's writes are done when it returns, its searches' recall log too (written off
        # the search's path). A command that searched has imported retrieval; one that did not
        # has nothing to wait for and keeps its light start.
        if (retrieval := sys.modules.get("memory_assets.core.search.retrieval")) is not None:
            retrieval.flush_recalls()
    if isinstance(result, int):  # a command that printed its own output returns its exit status
        return result
    if result is None:
        return 0
    _print_result(args, result)
    return 0


def _print_result(args: argparse.Namespace, result: Any) -> None:
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=None if isinstance(result, list) else 2))
    else:
        _print_human(result)


if __name__ == "__main__":
    sys.exit(main())
