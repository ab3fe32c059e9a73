"""A catalog template renders within a budget: past a limit it stops at once with the limit named (issue 39, item 5)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from domain.catalog import Budget, BudgetExceeded, Clock, RenderError, render

CLOCK = Clock(datetime(2026, 1, 1, tzinfo=UTC), lambda low, high: low)


def quick(text: str, values: dict | None = None, budget: Budget | None = None) -> tuple[str, float]:
    """What the render raised (its message) and the CPU time it took (not wall time: another process's load does not move it)."""
    started = time.process_time()
    with pytest.raises(RenderError) as raised:
        render(text, values or {}, CLOCK, budget)
    return str(raised.value), time.process_time() - started


def test_a_huge_printf_width_or_precision_is_refused_naming_the_limit():
    message, took = quick('{{printf "%0999999999d" 1}}')
    assert "printf width 999999999 is over the limit of 1,000" in message and took < 1
    message, _ = quick('{{printf "%.99999s" "x"}}')
    assert "printf precision 99999" in message
    assert render('{{printf "%05d|%-4s|%.2f" 42 "ab" 3.14159}}', {}, CLOCK) == "00042|ab  |3.14"


def test_a_range_over_millions_is_refused_before_it_starts():
    message, took = quick("{{range 3000000}}x{{end}}")
    assert "range over 3,000,000 items is over the limit of 10,000" in message and took < 1


def test_nested_ranges_stop_at_the_step_limit():
    message, took = quick("{{range 10000}}{{range 10000}}{{end}}{{end}}")
    assert "steps (the limit)" in message and took < 5


def test_the_output_is_capped():
    message, _ = quick('{{range 10000}}{{printf "%1000s" "x"}}{{end}}')
    assert "the rendered text is over 1,048,576 characters" in message


def test_functions_cannot_build_huge_strings_lists_or_numbers():
    assert "replace's result" in quick('{{$s := printf "%1000s" ""}}{{replace "" $s $s | replace "" $s}}')[0]
    doubled = "{{$s := printf \"%1000s\" \"x\"}}{{range 12}}{{$s = print $s $s}}{{end}}"
    assert "print would make a string of over 1,048,576 characters" in quick(doubled)[0]
    commas = '{{$c := replace " " "," (printf "%1000s" "")}}{{splitList "," (print $c $c $c $c $c $c $c $c $c $c)}}'
    assert "splitList made 10,001 items, over the limit of 10,000" in quick(commas)[0]
    grown = "{{$l := list}}{{range 10000}}{{$l = append $l 1}}{{end}}"  # each append copies the list: it costs
    assert "steps (the limit)" in quick(grown)[0]
    squared = "{{$n := 2}}{{range 20}}{{$n = mul $n $n}}{{end}}{{$n}}"
    assert "number of over 256 bits" in quick(squared)[0]


def test_a_deadline_given_from_outside_stops_the_render():
    turns = iter(range(10**9))
    budget = Budget(expired=lambda: next(turns) > 3, seconds=2)
    message, _ = quick("{{range 10000}}{{range 10}}{{end}}{{end}}", budget=budget)
    assert message == "the render ran past its deadline of 2 s"
    assert isinstance(BudgetExceeded(message), RenderError)


def test_a_render_cannot_hold_many_large_strings_at_once():
    """Each large string costs steps in proportion: a list of 1 MiB copies stops after a dozen, not hundreds."""
    import tracemalloc

    hoard = ('{{$b := printf "%1000s" ""}}{{range 10}}{{$b = print $b $b}}{{end}}'
             '{{$l := list}}{{range 1000}}{{$l = append $l (print $b "x")}}{{end}}')
    tracemalloc.start()
    try:
        assert "steps (the limit)" in quick(hoard)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20


def peak_of(text: str) -> tuple[str, int]:
    """What the render raised and the most memory it held at once (bytes, traced)."""
    import tracemalloc

    tracemalloc.start()
    try:
        message = quick(text)[0]
        return message, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


MIB = '{{$s := printf "%1000s" ""}}{{range 10}}{{$s = print $s $s}}{{end}}'  # $s: a 1 MiB string (1,024,000)


@pytest.mark.parametrize("function", ["print", "println", "quote", "squote", 'printf "' + "%v" * 100 + '"'])
def test_a_function_given_many_copies_of_a_large_string_is_refused_before_it_builds_them(function):
    message, peak = peak_of(MIB + "{{" + function + " $s" * 100 + "}}")
    assert "would make a string of over 1,048,576 characters (the limit)" in message
    assert peak < 16 * 2**20  # 100 copies would be 100 MiB


def test_printf_stops_at_the_limit_while_padding_many_verbs():
    message, peak = peak_of(MIB + '{{$f := replace " " "%1000s" (substr 0 20000 $s)}}{{printf $f' + " 1" * 20_000
                            + "}}")
    assert "printf's result would be over 1,048,576 characters (the limit)" in message
    assert peak < 16 * 2**20  # 20,000 padded verbs would be 20 MB


def test_every_argument_of_a_call_costs_a_step():
    message, _ = quick("{{add" + " 1" * 2_000 + "}}", budget=Budget(max_steps=1_000))
    assert "over 1,000 steps (the limit)" in message


def test_mul_of_many_large_numbers_stops_at_the_size_limit_not_after_multiplying_them_all():
    big = "{{$n := mul 18446744073709551615 18446744073709551615 18446744073709551615}}"  # 192 bits
    message, took = quick(big + "{{mul" + " $n" * 40_000 + "}}")  # multiplying them all took 36 s
    assert "mul made a number of over 256 bits (the limit)" in message and took < 3


def test_split_list_refuses_a_list_past_the_limit_before_it_splits():
    message, peak = peak_of(MIB + '{{$c := replace " " "ab," (substr 0 340000 $s)}}{{splitList "," $c}}')
    assert "splitList made 340,001 items, over the limit of 10,000" in message
    assert peak < 12 * 2**20  # 340,000 two-letter strings and their list: over 20 MiB


def test_a_1_mib_template_of_actions_is_refused_in_well_under_a_second():
    message, took = quick("{{1}}" * (2**20 // 5))  # took 94 s to parse, counting lines from the start each time
    assert "the template has over 50,000 actions and terms (the limit)" in message and took < 1


def cpu_seconds_of_render(lines: int) -> float:
    """The least CPU time, over two tries, that rendering `lines` lines of one action each took. Each try's text
    differs in its first character, so neither finds the other's parse kept."""
    tries = []
    for first in "ab":
        text = first + ("{{1}}" + "x" * 46 + "\n") * lines
        started = time.process_time()
        assert len(render(text, {}, CLOCK)) == 1 + lines * 48
        tries.append(time.process_time() - started)
    return min(tries)


def test_a_1_mib_template_of_20000_actions_renders_in_time_linear_in_its_size():
    # Ten times the lines costs about ten times the CPU; counting lines from the start each time (parsing alone took
    # 11 s) cost a hundred times. CPU time of this process, so another process's load does not move it.
    small, large = cpu_seconds_of_render(2_000), cpu_seconds_of_render(20_000)
    assert large < 35 * max(small, 0.005), (small, large)
    text = ("{{1}}" + "x" * 46 + "\n") * 20_000
    with pytest.raises(RenderError, match='line 20001: function "frob" not defined'):
        render(text + "{{frob}}", {}, CLOCK)


@pytest.mark.parametrize(("text", "limit"), [
    ("{{" + "(" * 5000 + "1" + ")" * 5000 + "}}", "line 1: parentheses are nested over 100 deep (the limit)"),
    ("{{if 1}}" * 5000 + "{{end}}" * 5000, "line 1: blocks are nested over 100 deep (the limit)"),
    ("{{with 1}}\n" * 5000 + "{{end}}" * 5000, "line 101: blocks are nested over 100 deep (the limit)"),
])
def test_deep_nesting_is_a_render_error_naming_the_limit(text, limit):
    assert quick(text)[0] == limit  # was Python's RecursionError: a 500
    assert render("{{" + "(" * 100 + "1" + ")" * 100 + "}}" + "{{if 1}}" * 100 + "x" + "{{end}}" * 100, {},
                  CLOCK) == "1x"


@pytest.mark.parametrize("use", ["{{$l}}", "{{toJson $l}}", "{{print $l}}"])
def test_a_value_the_template_nests_deeply_is_a_render_error_naming_the_limit(use):
    message, _ = quick("{{$l := list}}{{range 5000}}{{$l = list $l}}{{end}}" + use)
    assert "nested too deeply to print or compare (the limit is Python's stack" in message  # was a RecursionError


def test_parsing_looks_at_the_deadline():
    message, _ = quick("{{1}}" * 40_000, budget=Budget(expired=lambda: True, seconds=3))
    assert message == "parsing the template ran past the render's deadline of 3 s"


def test_a_1_mib_string_in_a_template_parses_in_little_memory():
    message, peak = peak_of('{{$s := "' + 'ab\\"}}' * 170_000 + '"}}{{fail (len $s)}}')
    assert message == "850000" and peak < 16 * 2**20  # the regular expression's backtracking held 150 MiB


def test_a_template_is_parsed_once_however_often_it_is_rendered():
    from domain.catalog.goparse import parse

    text = "{{range 3}}{{.}}{{end}} once"
    assert parse(text) is parse(text)
