"""YAML 1.1's surprises are gone from Fuzzfiles: a key given twice is an error naming both lines, `1:30` is not 90
and `017` is not 15 (where a number is expected, the error says how to write one)."""

from domain.fuzzfile import parse_fuzzfile
from domain.fuzzfile.decode import load_yaml
from tests.unit.fuzzfile.test_fuzzfile_parse import job, paths


def test_a_key_given_twice_is_refused_naming_both_lines():
    text = "version: v4\njobs:\n  train:\n    image: {uri: docker://a}\n    script: x\n    image: {uri: docker://b}\n"
    result = parse_fuzzfile(text)
    assert result.definition is None
    [error] = result.errors
    assert "duplicate key `image`" in error.message
    assert "first at line 4" in error.message and "again at line 6" in error.message


def test_a_job_named_twice_is_refused_too():
    text = job("script: x") + "  train:\n    image: {uri: docker://b}\n    script: y\n"
    assert "duplicate key `train` (first at line 3, again at line 6" in parse_fuzzfile(text).errors[0].message


def test_merge_keys_may_still_be_overridden_by_the_mapping_own_keys():
    document, problems = load_yaml("base: &b {cores: 1}\nmine:\n  <<: *b\n  cores: 2\n")
    assert problems == [] and document["mine"] == {"cores": 2}


def test_a_time_like_value_is_text_not_sexagesimal_seconds():
    assert load_yaml("execute: 1:30")[0] == {"execute": "1:30"}
    errors = paths(job("script: x\npolicy: {timeout: {execute: 1:30}}"))
    assert "not a duration" in errors["jobs.train.policy.timeout.execute"]


def test_a_leading_zero_is_not_octal():
    assert load_yaml("a: 017\nb: 0o17\nc: 17\nd: 0x1f")[0] == {"a": "017", "b": 15, "c": 17, "d": 31}
    errors = paths(job("script: x\nresource: {cpu: {cores: 017}}"))
    assert errors["jobs.train.resource.cpu.cores"] == (
        "`017` has a leading zero, which YAML 1.1 reads as octal: write 17, or 0o17 if you mean octal")


def test_a_leading_zero_in_text_keeps_its_zero():
    result = parse_fuzzfile(job("command: [echo, 01234]"))
    assert result.errors == []
    assert result.definition.jobs["train"].command == ["echo", "01234"]
    assert type(result.definition.jobs["train"].command[1]) is str
