"""The prediction parser: what students type ("4D", "2 RTT", "4D+40", "40") and its errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfolab.lab.expression import Expression, ExpressionError, parse


@pytest.mark.parametrize(
    ("text", "d", "ms"),
    [
        ("40", 0, 40),
        ("40ms", 0, 40),
        ("40 ms", 0, 40),
        ("4D", 4, 0),
        ("4 d", 4, 0),
        ("D", 1, 0),
        ("2 RTT", 4, 0),
        ("2RTTs", 4, 0),
        ("rtt", 2, 0),
        ("4D+40", 4, 40),
        ("2RTT + 40ms", 4, 40),
        ("4 x D", 4, 0),
        ("4*D + 0.5", 4, 0.5),
        ("4\u00d7D", 4, 0),
        (".5 RTT", 1, 0),
        ("2D - 1 ms", 2, -1),
        ("D + RTT", 3, 0),
    ],
)
def test_reads_what_students_write(text: str, d: float, ms: float) -> None:
    expression = parse(text)
    assert (expression.d, expression.ms) == (d, ms)
    assert expression.text == text.strip()


def test_value_at_a_delay() -> None:
    assert parse("4D+40").ms_at(10) == 80
    assert parse("2 RTT").ms_at(25) == 100
    assert parse("40").ms_at(300) == 40


@pytest.mark.parametrize(
    "text", ["", "   ", "4Q", "4D 40", "4d+", "x", "4*40", "1e3", "(4D)", "4 s", "dd", "--4"]
)
def test_bad_expressions_give_one_line(text: str) -> None:
    with pytest.raises(ExpressionError) as err:
        parse(text)
    message = str(err.value)
    assert "\n" not in message and message
    assert "e.g." in message


def test_too_long_or_too_large() -> None:
    with pytest.raises(ExpressionError, match="at most"):
        parse("1+" * 50 + "1")
    with pytest.raises(ExpressionError, match="too large"):
        parse("9999999D")


coefficients = st.integers(min_value=-50, max_value=50)


@given(a=coefficients, b=coefficients, c=st.integers(min_value=0, max_value=5000))
def test_sums_of_d_rtt_and_ms(a: int, b: int, c: int) -> None:
    text = f"{a}D + {b} RTT + {c} ms".replace("+ -", "- ")
    expression = parse(text)
    assert expression.d == a + 2 * b
    assert expression.ms == c


@given(
    d=st.floats(min_value=-1000, max_value=1000, allow_nan=False).map(lambda x: round(x, 2)),
    ms=st.floats(min_value=-1000, max_value=1000, allow_nan=False).map(lambda x: round(x, 2)),
)
def test_the_canonical_words_read_back_the_same(d: float, ms: float) -> None:
    words = Expression(d, ms).words()
    again = parse(words)
    assert (again.d, again.ms) == pytest.approx((d, ms))


@given(st.text(max_size=30))
def test_any_text_parses_or_says_why_in_one_line(text: str) -> None:
    try:
        expression = parse(text)
    except ExpressionError as err:
        assert "\n" not in str(err)
    else:
        assert expression.ms_at(10.0) == expression.d * 10.0 + expression.ms


@given(st.floats(min_value=0, max_value=500, allow_nan=False), coefficients, coefficients)
def test_linear_in_the_delay(delay: float, a: int, c: int) -> None:
    expression = parse(f"{a}D + {c}".replace("+ -", "- "))
    assert expression.ms_at(delay) == pytest.approx(a * delay + c)
