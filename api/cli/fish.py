"""A fish completion script from the CLI's own argparse parser (shtab writes bash, zsh and tcsh, not fish).

Each command and action is offered where fish has seen the words before it; each option where its action is
being typed, with its fixed choices (e.g. -o table|wide|json|yaml) and a file argument completing file names."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Iterator

Path = tuple[str, ...]


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """The parser's subcommands, each with its parser and its one-line help."""
    found: dict[str, tuple[argparse.ArgumentParser, str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            found |= {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}
    return found


def condition(path: Path, siblings: list[str]) -> str:
    """Fish's test for "the words so far are `path`, and none of `siblings` is typed yet"."""
    if not path:
        return "__fish_use_subcommand"
    seen = " ; and ".join(f"__fish_seen_subcommand_from {word}" for word in path)
    return f"{seen} ; and not __fish_seen_subcommand_from {' '.join(siblings)}" if siblings else seen


def options(parser: argparse.ArgumentParser, where: str) -> Iterator[str]:
    for action in parser._actions:
        longs = [o[2:] for o in action.option_strings if o.startswith("--")]
        shorts = [o[1:] for o in action.option_strings if len(o) == 2]
        if not longs and not shorts:
            if getattr(action, "complete", None):  # a positional marked for files (api.cli.completion.FILES)
                yield f"complete -c roving -n {shlex.quote(where)} -F"
            continue
        flags = " ".join([*(f"-l {name}" for name in longs), *(f"-s {name}" for name in shorts)])
        takes = " -r" if action.nargs != 0 else ""
        choices = f" -f -a {shlex.quote(' '.join(map(str, action.choices)))}" if action.choices else ""
        about = f" -d {shlex.quote(first_line(action.help))}" if action.help else ""
        yield f"complete -c roving -n {shlex.quote(where)} {flags}{takes}{choices}{about}"


def first_line(text: str | None) -> str:
    return (text or "").split("\n")[0].split(". ")[0][:80]


def lines(parser: argparse.ArgumentParser, path: Path = ()) -> Iterator[str]:
    subs = subcommands(parser)
    names = sorted(subs)
    where = condition(path, names)
    for name in names:
        about = f" -d {shlex.quote(first_line(subs[name][1]))}" if subs[name][1] else ""
        yield f"complete -c roving -f -n {shlex.quote(where)} -a {shlex.quote(name)}{about}"
    if path:
        yield from options(parser, condition(path, []))
    for name in names:
        yield from lines(subs[name][0], (*path, name))


def fish_script(parser: argparse.ArgumentParser) -> str:
    header = ["# roving completion for fish: roving completion fish > ~/.config/fish/completions/roving.fish",
              "complete -c roving -f"]
    return "\n".join([*header, *lines(parser)])
