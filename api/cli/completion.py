"""`roving completion bash|zsh|tcsh|fish`: a tab-completion script for the shell, from the CLI's own parser.

shtab writes a static script once, so completing costs the shell nothing and `roving` needs no hook on every
start (argcomplete instead runs Python on each TAB press and needs a marker in the entry point).
"""

from __future__ import annotations

import argparse
from typing import Any

from api.cli.client import Client

SHELLS = ("bash", "zsh", "tcsh", "fish")
HOWTO = """Load it once per shell, or install it where your shell looks for completions:

  bash:  source <(roving completion bash)
         roving completion bash > ~/.local/share/bash-completion/completions/roving
  zsh:   roving completion zsh > "${fpath[1]}/_roving"   (then start a new shell)
  tcsh:  roving completion tcsh > ~/.roving.tcsh && echo 'source ~/.roving.tcsh' >> ~/.tcshrc
  fish:  roving completion fish > ~/.config/fish/completions/roving.fish

The script completes commands, actions, options and their fixed choices (e.g. -o table|wide|json|yaml).
Regenerate it after upgrading roving."""
# shtab's file completion, without importing it (fish: any truthy mark, api.cli.fish reads it)
FILES = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f", "fish": "f"}


def script(args: argparse.Namespace, client: Client) -> Any:
    from api.cli.main import build_parser  # the whole parser, every group registered

    if args.shell == "fish":
        from api.cli.fish import fish_script

        return fish_script(build_parser())
    import shtab  # only this command needs it

    return shtab.complete(build_parser(), shell=args.shell).rstrip("\n")


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("completion", help="print a shell completion script (bash, zsh, tcsh or fish)",
                            description="Print a tab-completion script for SHELL on standard output.", epilog=HOWTO,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    p.set_defaults(handler=script, output="table", columns=None)
