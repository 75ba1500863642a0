"""``python -m jitcache list|show|clear``: look into and empty the build cache."""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from . import default_cache_dir
from .cache import SETTING, clear, entries


def _cache_dir(given: str | None) -> str:
    """``--cache-dir``, else ``$STENCILGEN_CACHE_DIR``, else the default cache directory."""
    chosen = given or os.environ.get(SETTING) or default_cache_dir()
    return os.path.expanduser(chosen)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _list(cache_dir: str) -> int:
    found = entries(cache_dir)
    if not found:
        print(f"no entries in {cache_dir}")
        return 0
    rows = [("NAME", "KEY", "COMPILER", "CREATED", "SIZE", "EDITED")]
    rows += [(e["name"], e["key"][:16], e["compiler"] or "?", e["created"] or "?",
              _size(e["size"]), "yes" if e["edited"] else "") for e in found]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    print(f"{len(found)} entr{'y' if len(found) == 1 else 'ies'} in {cache_dir}")
    return 0


def _show(cache_dir: str, which: str) -> int:
    found = [e for e in entries(cache_dir)
             if which in (e["name"], Path(e["path"]).name) or e["key"].startswith(which)]
    if not found:
        print(f"no cache entry in {cache_dir} has the name or key prefix {which!r} "
              "(see `python -m jitcache list`)", file=sys.stderr)
        return 1
    for e in found:
        print(f"== {e['path']}")
        print(f"source: {e['source']}" + ("  (edited by hand)" if e["edited"] else ""))
        for field, value in e["meta"].items():
            if isinstance(value, list):
                value = shlex.join(value)
            print(f"{field}: {value}")
        if e["source"] and os.path.isfile(e["source"]):
            print(f"-- {e['source']}")
            print(Path(e["source"]).read_text(errors="replace"), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one subcommand; returns the exit status."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache-dir", default=argparse.SUPPRESS,
                        help="cache directory (default: $STENCILGEN_CACHE_DIR, else "
                             "$XDG_CACHE_HOME/stencilgen or ~/.cache/stencilgen)")
    parser = argparse.ArgumentParser(prog="python -m jitcache", parents=[common],
                                     description="List, show or clear stencilgen's build cache.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{list,show,clear}")
    sub.add_parser("list", parents=[common], help="one line per cache entry")
    show = sub.add_parser("show", parents=[common], help="an entry's source path, meta and source")
    show.add_argument("which", metavar="NAME_OR_KEY_PREFIX")
    clr = sub.add_parser("clear", parents=[common], help="remove all entries, or those named NAME")
    clr.add_argument("name", nargs="?", metavar="NAME", help="operator name (a glob is allowed)")
    args = parser.parse_args(argv)
    cache_dir = _cache_dir(getattr(args, "cache_dir", None))

    if args.command == "list":
        return _list(cache_dir)
    if args.command == "show":
        return _show(cache_dir, args.which)
    removed = clear(cache_dir, args.name)
    what = f" named {args.name!r}" if args.name else ""
    print(f"removed {removed} cache entr{'y' if removed == 1 else 'ies'}{what} from {cache_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
