"""Presets as values: what a preset file may say, the digest that names its effect, and how options combine."""

import pytest

from domain.presets import PresetError, expand, parse_preset


def test_the_digest_names_what_the_options_do_not_how_the_file_is_laid_out():
    one = parse_preset("gpu", {"description": "a", "options": {"priority": -1, "project": "ml"}})
    two = parse_preset("gpu", {"options": {"project": "ml", "priority": -1}})
    three = parse_preset("gpu", {"options": {"project": "ml", "priority": -2}})
    assert one.digest == two.digest != three.digest
    assert one.digest.startswith("sha256:") and len(one.digest) == 71


@pytest.mark.parametrize("document, field", [
    ({"options": {"priority": 3}}, "options.priority"),
    ({"options": {"project": "Not A Path"}}, "options.project"),
    ({"options": {"cores": 4}}, "options.cores"),
    ({"options": {"annotations": {"roving.preset": "x"}}}, "options.annotations"),
    ({"optoins": {}}, "optoins"),
    ([1, 2], ""),
])
def test_a_bad_preset_names_its_field(document, field):
    with pytest.raises(PresetError) as refused:
        parse_preset("p", document)
    assert refused.value.field == field


def test_a_bad_name_is_refused():
    with pytest.raises(PresetError, match="is not a preset name"):
        parse_preset("../etc/passwd", {"options": {}})


def test_the_command_line_wins_and_the_preset_is_recorded():
    preset = parse_preset("gpu", {"options": {"priority": -5, "preemptible": True, "annotations": {"team": "ml"}}})
    used = expand(preset, {"priority": -1, "preemptible": None, "project": None})
    assert (used["priority"], used["preemptible"], "project" in used) == (-1, True, False)
    assert used["annotations"] == {"team": "ml", "roving.preset": "gpu", "roving.preset-digest": preset.digest}
