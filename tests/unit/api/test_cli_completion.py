"""`roving completion SHELL` (bash, zsh, tcsh, fish) prints a script the shell accepts that completes the CLI's
own commands."""

import shutil
import subprocess

import pytest

from api.cli.main import main


def script(shell, capsys):
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete(script_text, *words):
    """What bash offers after `roving WORDS...` (the last word is the one being completed)."""
    words = " ".join(f"'{w}'" for w in ("roving", *words))
    program = f'{script_text}\nCOMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _shtab_roving\n' \
              'printf "%s\\n" "${COMPREPLY[@]}"'
    return subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30).stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_script_is_valid_and_completes_commands_actions_and_choices(capsys):
    text = script("bash", capsys)
    assert subprocess.run(["bash", "-n"], input=text, text=True, timeout=30).returncode == 0
    assert {"workflow", "queue", "node"} <= set(complete(text, ""))
    assert complete(text, "queue", "sh") == ["show"]
    assert "wide" in complete(text, "queue", "show", "-o", "")


def test_zsh_and_tcsh_scripts_name_the_commands(capsys):
    assert script("zsh", capsys).startswith("#compdef roving")
    assert "workflow" in script("tcsh", capsys)


def test_an_unknown_shell_is_bad_usage(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["completion", "cmd.exe"])
    assert exit.value.code == 2 and "bash" in capsys.readouterr().err


def fish_offers(script_text, tmp_path, line):
    """What fish offers for the command line `line` (its first column: the candidates, not their descriptions)."""
    path = tmp_path / "roving.fish"
    path.write_text(script_text)
    done = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C {line!r}"], capture_output=True,
                          text=True, timeout=30)
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


@pytest.mark.skipif(shutil.which("fish") is None, reason="needs fish (Debian's fish package)")
def test_the_fish_script_is_valid_and_completes_commands_actions_choices_and_files(capsys, tmp_path):
    text = script("fish", capsys)
    assert subprocess.run(["fish", "--no-config", "--no-execute"], input=text, text=True, timeout=30).returncode == 0
    assert {"workflow", "queue", "node"} <= set(fish_offers(text, tmp_path, "roving "))
    assert fish_offers(text, tmp_path, "roving queue sh") == ["show"]
    assert fish_offers(text, tmp_path, "roving workflow st") == ["start", "stop"]
    assert "wide" in fish_offers(text, tmp_path, "roving queue show -o ")
    (tmp_path / "hello.yaml").write_text("version: v4\n")
    assert f"{tmp_path}/hello.yaml" in fish_offers(text, tmp_path, f"roving workflow start {tmp_path}/he")
