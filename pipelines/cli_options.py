"""Options that many `engram` commands share, declared once so they read and default the same everywhere."""

from __future__ import annotations

import argparse
import getpass
import os


def home_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--home", default=os.environ.get("ENGRAM_HOME", ".engram"), help="Home folder of the stores.")


def vault_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--vault", default=os.environ.get("ENGRAM_VAULT"), help="The vault folder (or ENGRAM_VAULT).")


def operator_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--by", default=os.environ.get("ENGRAM_OPERATOR") or getpass.getuser(),
        help="Who decides (default: ENGRAM_OPERATOR or the login name).",
    )
