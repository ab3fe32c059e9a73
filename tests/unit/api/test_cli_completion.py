"""`roving completion SHELL` prints a script the shell accepts and that completes the CLI's own commands."""

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
