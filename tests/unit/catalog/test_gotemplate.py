"""The catalog's Go text/template renderer prints what Go's text/template (with sprig) prints for the same input."""

from datetime import UTC, datetime

import pytest

from domain.catalog import Clock, RenderError, TemplateFailure, render

CLOCK = Clock(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), lambda low, high: low + 7)


def go(text: str, **values) -> str:
    return render(text, values, CLOCK)


def test_trim_markers_eat_the_whitespace_and_newlines_beside_the_action():
    assert go("a  \n {{- .X -}} \n  b", X=1) == "a1b"
    assert go("a {{ .X }} b", X=1) == "a 1 b"


def test_comments_print_nothing():
    assert go("x{{/* a comment */}}y{{- /* trimmed */ -}} z") == "xyz"


def test_if_else_if_else_takes_the_first_true_branch():
    text = "{{ if eq .N 1 }}one{{ else if eq .N 2 }}two{{ else }}many{{ end }}"
    assert [go(text, N=n) for n in (1, 2, 3)] == ["one", "two", "many"]


def test_empty_strings_zero_and_empty_lists_are_false():
    text = "{{ if .V }}yes{{ else }}no{{ end }}"
    assert [go(text, V=v) for v in ("", 0, [], {}, None, False, "x", 1, [0])] == ["no"] * 6 + ["yes"] * 3


def test_with_sets_the_dot_and_falls_to_else_when_empty():
    text = "{{ with .User }}hi {{ .Name }}{{ else }}nobody{{ end }}"
    assert go(text, User={"Name": "ada"}) == "hi ada"
    assert go(text, User={}) == "nobody"


def test_range_binds_index_and_element_and_ranges_a_map_in_key_order():
    assert go("{{ range $i, $v := .L }}{{ $i }}={{ $v }};{{ end }}", L=["a", "b"]) == "0=a;1=b;"
    assert go("{{ range $k, $v := .M }}{{ $k }}{{ $v }} {{ end }}", M={"b": 2, "a": 1}) == "a1 b2 "
    assert go("{{ range .L }}[{{ . }}]{{ else }}none{{ end }}", L=[]) == "none"


def test_a_variable_declared_in_a_block_ends_with_it_and_assignment_changes_the_outer_one():
    text = "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ end }}{{ $x }}"
    assert go(text) == "2"
    with pytest.raises(RenderError, match=r"undefined variable: \$y"):
        go("{{ if true }}{{ $y := 3 }}{{ end }}{{ $y }}")


def test_dollar_is_the_root_inside_range():
    assert go("{{ range .L }}{{ $.P }}{{ . }} {{ end }}", L=[1, 2], P="n") == "n1 n2 "


def test_a_pipeline_passes_its_value_as_the_last_argument():
    assert go('{{ "x" | printf "%s-%s" "a" }}') == "a-x"
    assert go('{{ .P | trimPrefix "/" | base }}', P="/data/in/file.txt") == "file.txt"


def test_printf_verbs_behave_as_go():
    assert go('{{ printf "%q" .S }}', S='say "hi"') == '"say \\"hi\\""'
    assert go('{{ printf "%8d|%-4d|%05d" 42 7 3 }}') == "      42|7   |00003"
    assert go('{{ printf "%v %s %d%%" true "s" 9 }}') == "true s 9%"
    assert go('{{ printf "%d" }}') == "%!d(MISSING)"


def test_a_missing_value_prints_no_value():
    assert go("{{ .Missing }}") == "<no value>"


def test_and_or_stop_at_the_argument_that_decides():
    assert go("{{ and .L (index .L 5) }}", L=[]) == "[]"
    assert go('{{ or .A "fallback" }}', A="") == "fallback"


def test_fail_stops_the_render_with_its_message():
    with pytest.raises(TemplateFailure, match="Cores must be positive"):
        go('{{ if not .Cores }}{{ fail "Cores must be positive" }}{{ end }}', Cores=0)


def test_an_unknown_function_is_an_error_with_its_line_even_in_a_branch_not_taken():
    with pytest.raises(RenderError, match='line 2: function "frobnicate" not defined'):
        go("a\n{{ if false }}{{ frobnicate 1 }}{{ end }}")


def test_an_unclosed_block_or_action_is_an_error():
    with pytest.raises(RenderError, match="missing its"):
        go("{{ if true }}x")
    with pytest.raises(RenderError, match="unclosed action"):
        go("x {{ .A ")


def test_comparing_a_number_with_a_string_is_an_error_as_in_go():
    with pytest.raises(RenderError, match="incompatible types"):
        go('{{ eq 1 "1" }}')


def test_now_and_rand_int_come_from_the_clock():
    assert go("{{ now | unixEpoch }}") == "1735787045"
    assert go("{{ randInt 10000 30000 }}") == "10007"


def test_sprig_string_helpers():
    assert go("{{ substr 2 4 .V }}|{{ substr 5 99 .V }}", V="2024.2") == "24|2"
    assert go('{{ splitList "," "" | len }} {{ splitList ":" "a:b:c" | len }}') == "1 3"
    assert go('{{ join "," (list 1 "b") }}') == "1,b"
    assert go('{{ toJson .M }}', M={"a": "<b>"}) == '{"a":"\\u003cb\\u003e"}'
    assert go('{{ "abc" | b64enc }} {{ default "d" "" }} {{ default "d" "v" }}') == "YWJj d v"
    assert go('{{ trimAll "/" "/x/" }} {{ base "" }} {{ base "/" }}') == "x . /"


def test_index_out_of_range_is_an_error_not_a_crash():
    with pytest.raises(RenderError, match="index out of range"):
        go("{{ index .L 3 }}", L=[1])
