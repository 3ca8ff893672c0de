"""`pitwatch users`: the console's local accounts (console/accounts.py)."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from .triage import ROLES


class _Users:
    name = "users"
    help = "the console's local accounts: add, remove, list"
    description = f"""\
Accounts of `pitwatch serve`, kept in a JSON file readable by its owner only, with
argon2id password hashes. Every console that names the same file (--users) sees a
change at once; a removed user's sessions end on their next request.

roles: {", ".join(ROLES)}
  viewer        reads every page
  operator      acknowledges, escalates, adds notes
  investigator  also marks investigating, assigns, closes with a disposition
  supervisor    everything, and reopens a closed finding

examples:
  pitwatch users add ana --role supervisor              asks for the password twice
  pitwatch users add bo --role viewer --generate        prints a new password
  printf '%s' "$PW" | pitwatch users add cy --role operator --password-stdin
  pitwatch users list --users /etc/pitwatch/users.json
  pitwatch users remove bo"""

    def configure(self, p: argparse.ArgumentParser) -> None:
        p.add_argument("action", choices=("add", "remove", "list"))
        p.add_argument("name", nargs="?", help="the user name (add, remove)")
        p.add_argument("--role", choices=ROLES, help="(add)")
        p.add_argument("--users", type=Path, metavar="FILE",
                       help="the accounts file (default DIR/console-users.json of --data)")
        p.add_argument("--data", default="pitwatch-data", metavar="DIR",
                       help="the embedded store's directory (default ./%(default)s)")
        how = p.add_mutually_exclusive_group()
        how.add_argument("--password-stdin", action="store_true",
                         help="read the password from standard input")
        how.add_argument("--generate", action="store_true",
                         help="make a random password and print it")

    def run(self, args: argparse.Namespace) -> int:
        from .accounts import Accounts, new_password

        path = args.users or Path(args.data) / "console-users.json"
        accounts = Accounts(path)
        try:
            if args.action == "list":
                for a in sorted(accounts.all().values(), key=lambda a: a.name):
                    print(f"{a.name}\t{a.role}")
                return 0
            if not args.name:
                print(f"pitwatch users {args.action}: name the user", file=sys.stderr)
                return 2
            if args.action == "remove":
                if not accounts.remove(args.name):
                    print(f"pitwatch users: no user {args.name!r} in {path}", file=sys.stderr)
                    return 1
                print(f"removed {args.name} from {path}")
                return 0
            if not args.role:
                print("pitwatch users add: --role is needed", file=sys.stderr)
                return 2
            if args.generate:
                password = new_password()
            elif args.password_stdin:
                password = sys.stdin.read().rstrip("\n")
            else:
                password = getpass.getpass(f"password for {args.name}: ")
                if getpass.getpass("again: ") != password:
                    print("pitwatch users: the passwords differ", file=sys.stderr)
                    return 2
            accounts.add(args.name, args.role, password)
        except (ValueError, PermissionError, OSError) as e:
            print(f"pitwatch users: {e}", file=sys.stderr)
            return 2
        print(f"{args.name} ({args.role}) in {path}"
              + (f"; password {password}" if args.generate else ""))
        return 0


command = _Users()
