"""`eagle4` command line. Each subcommand is a module of this package with
``register(subparsers)``; modules are discovered, so adding a command touches no other file."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eagle4", description="EAGLE4 CostDraftTree FPGA-vs-H100 sign-off harness")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "register"):
            mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, KeyError, RuntimeError) as e:  # clear message, no traceback
        print(f"eagle4 {args.command}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a path that is a folder, under a file, unreadable, ...: one line naming it
        what = f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e)
        print(f"eagle4 {args.command}: error: {what}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
