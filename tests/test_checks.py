"""Unit tests for pytest_vibeeval.checks: patterns, token limits, the other built-ins, three-valued
logic and the registry."""

from __future__ import annotations

import json
import re
import string
import unicodedata
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from pytest_vibeeval.check_api import JudgeError
from pytest_vibeeval.checks import (
    BUILTIN_CHECKS,
    CUSTOM_CHECK_NAMES,
    STRUCTURAL_CHECK_NAMES,
    AnyOf,
    Check,
    CheckResult,
    ChecksError,
    CheckType,
    NonEmptyStr,
    Response,
    Verdict,
    compile_pattern,
    count_tokens,
    is_regex_pattern,
    pattern_matches,
    run_checks,
    structural_checks,
)
from pytest_vibeeval.patterns import canonical
from pytest_vibeeval.registry import CheckRegistry
from pytest_vibeeval.results import ToolCallRecord

REGISTRY = CheckRegistry()


def check(name: str, value: Any) -> Check:
    check_type = REGISTRY.get(name)
    assert check_type is not None, name
    return Check(check_type, check_type.adapter.validate_python(value))


def run_one(name: str, value: Any, text: str, output_tokens: int | None = None) -> CheckResult:
    return check(name, value).run(Response(text, output_tokens))


# A check type that cannot be decided in any installation (`semantic` can, with its extra).
PENDING = CheckType(
    "pending", NonEmptyStr, None, "never decided here", unavailable="the `pending` check is not available"
)


def pending() -> Check:
    return Check(PENDING, "x")


# --------------------------------------------------------------------------- match / not_match


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        # the whole text must match: no `*`, no partial match
        ("hello", "hello", True),
        ("hello", "hello world", False),
        ("hello", "say hello", False),
        ("world", "hello world", False),
        ("", "", True),
        # case-insensitive
        ("HELLO", "hello", True),
        ("*Paris*", "the capital is PARIS.", True),
        # `*` is any run of characters, including none and including newlines
        ("*", "", True),
        ("*", "anything\nat all", True),
        ("*4*", "4", True),
        ("*4*", "2 + 2 = 4, of course", True),
        ("*4*", "four", False),
        ("*4*", "line one\nline two: 4\nline three", True),
        ("a*b", "a\n\nb", True),
        ("hello*", "Hello there", True),
        ("hello*", "well, hello", False),
        ("*world", "hello world", True),
        ("*world", "world peace", False),
        ("*one*two*", "one, then two", True),
        ("*one*two*", "two, then one", False),
        ("a*a", "a", False),
        ("a*a", "aa", True),
        ("**", "x", True),
        # in a glob, ? . ( + [ | are literal
        ("*What is 2+2?*", "Q: What is 2+2? A: 4", True),
        ("*What is 2+2?*", "Q: What is 22 A: 4", False),
        ("*2+2*", "222", False),
        ("a.b", "a.b", True),
        ("a.b", "axb", False),
        ("(foo)", "(foo)", True),
        ("(foo)", "foo", False),
        ("what?", "what?", True),
        ("what?", "wha", False),
        ("*[ab]*", "x [ab] y", True),
        ("*[ab]*", "a", False),
        ("*yes|no*", "yes", False),
        ("*yes|no*", "yes|no", True),
        ("*.txt", "notes.txt", True),
        ("*.txt", "notes_txt", False),
        # regex-looking patterns are regular expressions, searched for (as in vibecheck), case-insensitive
        (".*X-[0-9]+.*", "created X-42 today", True),
        (".*X-[0-9]+.*", "created x-42 today", True),
        (".*X-[0-9]+.*", "created X-forty today", False),
        (".*X-[0-9]+.*", "first line\ncreated X-42\nlast line", True),
        ("^abc$", "abc", True),
        ("^abc$", "ABC", True),
        ("^abc$", "abcd", False),
        (r"\d+", "12345", True),
        (r"\d+", "12a45", True),
        (r"\d+", "twelve", False),
        (r"^\d+$", "12a45", False),
        ("[a-z]+", "Hello", True),
        ("[a-z]+", "hello world", True),
        ("^[a-z]+$", "hello world", False),
        ("x{2}", "xx", True),
        ("x{2}", "x{2}", False),
        (".+", "", False),
        # vibecheck's documented regex examples: anchors mean the answer's start and end
        (".*hello.*", "oh, Hello there", True),
        ("^goodbye", "goodbye everyone", True),
        ("^goodbye", "well, goodbye", False),
        ("world$", "hello world", True),
        ("world$", "hello world\n", True),
        ("world$", "world peace", False),
        ("^goodbye", "first line\ngoodbye", False),
        # a pattern that looks like a regex but does not compile is a glob
        ("*.*", "a.b", True),
        ("*.*", "ab", False),
        ("*[0-9]*", "x[0-9]y", True),
        ("*[0-9]*", "x5y", False),
    ],
)
def test_pattern_matches(pattern: str, text: str, expected: bool) -> None:
    assert pattern_matches(pattern, text) is expected


@pytest.mark.parametrize(
    ("pattern", "regex"),
    [
        # globs: nothing regex-like, or regex-like but not a valid regex
        ("*4*", False),
        ("hello*", False),
        ("*world", False),
        ("*What is 2+2?*", False),
        ("what?", False),
        ("a.b", False),
        ("file.txt", False),
        ("*.txt", False),
        ("(foo)", False),
        ("foo+", False),
        ("a|b", False),
        ("[ab]", False),  # a class without a range is not a marker
        ("x{2", False),
        ("[a-z", False),  # a marker, but not a valid regex
        ("*.*", False),  # `.*` is a marker, but a leading `*` does not compile
        ("*[0-9]*", False),
        ("*hello.*", False),
        (r"price: \$5", False),
        ("", False),
        ("*", False),
        ("*Thompson-Herah*", False),
        # regexes: each marker on its own
        (".*X-[0-9]+.*", True),
        (".*", True),  # `.` followed by * + ?
        (".+", True),
        ("a.?", True),
        (r"\d+", True),  # \d \D \w \W \s \S \b
        (r"\w", True),
        (r"\s*", True),
        (r"\bword\b", True),
        ("[a-z]+", True),  # a character range
        ("x[0-9]", True),
        ("(?i)yes", True),  # an inline flag or group extension
        ("x{2}", True),  # a counted repetition
        ("x{2,}", True),
        ("x{2,5}", True),
        ("^abc", True),  # a leading anchor
        ("abc$", True),  # a trailing anchor
        ("^abc$", True),
        (r"abc\$", False),  # an escaped dollar is not an anchor
    ],
)
def test_is_regex_pattern(pattern: str, regex: bool) -> None:
    assert is_regex_pattern(pattern) is regex


def test_match_and_not_match_messages_name_the_kind() -> None:
    ok = run_one("match", "*4*", "it is 4")
    assert ok.passed is True
    assert ok.message == "pattern '*4*' matches the response"
    bad = run_one("match", ".*X-[0-9]+.*", "nothing")
    assert bad.passed is False
    assert bad.message == "regex '.*X-[0-9]+.*' is not found in the response"
    assert (
        run_one("match", "^goodbye", "goodbye everyone").message
        == "regex '^goodbye' is found in the response"
    )
    refused = run_one("not_match", "^buy", "Buy now")
    assert (refused.passed, refused.message) == (
        False,
        "regex '^buy' is found in the response but must not be",
    )

    forbidden = run_one("not_match", "*buy*", "You should BUY now")
    assert forbidden.passed is False
    assert forbidden.message == "pattern '*buy*' matches the response but must not"
    fine = run_one("not_match", "*buy*", "consult an advisor")
    assert fine.passed is True
    assert fine.message == "pattern '*buy*' does not match the response"


def test_match_message_shortens_long_patterns() -> None:
    pattern = "*" + "x" * 100 + "*"
    message = run_one("match", pattern, "y").message
    assert "…" in message
    assert len(message) < 110


def test_match_rejects_an_empty_pattern() -> None:
    match = REGISTRY.get("match")
    assert match is not None
    with pytest.raises(ValueError):
        match.adapter.validate_python("")


# As the regex `.*e.*e.*e.*4.*`, `*e*e*e*4*` backtracks for minutes on a few kB of text: the timeout
# only guards against that hang.
@pytest.mark.timeout(60)
def test_glob_is_linear_not_backtracking() -> None:
    text = "The answer to this question is a matter of debate, and there are many views. " * 60
    for pattern in ("*e*e*e*4*", "*a*a*a*a*b", "*the*answer*is*4*"):
        assert pattern_matches(pattern, text) is False
    assert pattern_matches("*e*e*e*views. ", text) is True


# includes characters whose case folding is special: long s, Kelvin sign, sharp s, dotted/dotless i
GLOB_ALPHABET = "aAbB*.?+ \nsS\u017f\u212akK\u00df\u0130\u0131iI"


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=GLOB_ALPHABET, max_size=8),
    st.text(alphabet=GLOB_ALPHABET.replace("*", ""), max_size=10),
)
@example("a*a", "a")
@example("*\u017f*", "S")
@example("k*", "\u212a")  # the Kelvin sign folds to k
def test_glob_agrees_with_the_whole_text_regex(pattern: str, text: str) -> None:
    """The linear glob matcher gives what the compiled whole-text regex gives."""
    assume(not is_regex_pattern(pattern))
    assert pattern_matches(pattern, text) == (compile_pattern(pattern).fullmatch(text) is not None)


ASCII_NO_STAR = st.text(alphabet=string.printable.replace("*", ""), max_size=20)


@settings(max_examples=300, deadline=None)
@given(ASCII_NO_STAR, st.text(alphabet=string.printable, max_size=60))
@example("2+2?", "Q: What is 2+2? A: 4")
@example("A", "xa")
@example("", "")
@example("\r", "\n")  # a glob compares line ends as \n
def test_star_text_star_means_contains(t: str, s: str) -> None:
    pattern = "*" + t + "*"
    assume(not is_regex_pattern(pattern))
    assert pattern_matches(pattern, s) == (canonical(t).lower() in canonical(s).lower())


@settings(max_examples=100, deadline=None)
@given(ASCII_NO_STAR, ASCII_NO_STAR, st.text(alphabet=string.printable, max_size=40))
def test_prefix_and_suffix_globs(t: str, rest: str, s: str) -> None:
    assume(not is_regex_pattern(t + "*") and not is_regex_pattern("*" + t))
    assert pattern_matches(t + "*", s) == canonical(s).lower().startswith(canonical(t).lower())
    assert pattern_matches("*" + t, s) == canonical(s).lower().endswith(canonical(t).lower())
    assert pattern_matches(t + "*", t + rest)


# --------------------------------------------------------------------------- tokens


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("", 0),
        ("   \n\t", 0),
        ("hello", 1),
        ("hello world", 2),
        ("Hello, world!", 4),  # two words and two punctuation marks
        ("2+2=4", 5),  # digits are words; + and = are marks
        ("don't", 3),  # don, ', t
        ("well...", 4),  # each mark counts
        ("snake_case_word", 1),  # _ is a word character
        ("naïve café", 2),
    ],
)
def test_count_tokens_counts_words_and_punctuation_marks(text: str, count: int) -> None:
    assert count_tokens(text) == count


def test_min_tokens_counts_locally_without_a_provider_count() -> None:
    result = run_one("min_tokens", 3, "Hello, world!")
    assert result.passed is True
    assert result.message == "4 tokens (counted locally); min_tokens is 3"
    short = run_one("min_tokens", 5, "Hello, world!")
    assert short.passed is False
    assert short.message == "4 tokens (counted locally); min_tokens is 5"


def test_token_limits_prefer_the_provider_count() -> None:
    # The text has 1 local token; the provider says 50.
    result = run_one("min_tokens", 10, "word", output_tokens=50)
    assert result.passed is True
    assert result.message == "50 tokens (reported by the provider); min_tokens is 10"
    over = run_one("max_tokens", 10, "word", output_tokens=50)
    assert over.passed is False
    assert over.message == "50 tokens (reported by the provider); max_tokens is 10"
    zero = run_one("max_tokens", 0, "many words here", output_tokens=0)
    assert zero.passed is True
    assert "0 tokens (reported by the provider)" in zero.message


def test_token_limits_are_inclusive() -> None:
    assert run_one("min_tokens", 2, "a b").passed is True
    assert run_one("max_tokens", 2, "a b").passed is True
    assert run_one("max_tokens", 1, "a b").passed is False
    assert run_one("max_tokens", 5, "a b c d e f").message == "6 tokens (counted locally); max_tokens is 5"


@pytest.mark.parametrize("name", ["min_tokens", "max_tokens"])
def test_token_limits_reject_negative_values(name: str) -> None:
    check_type = REGISTRY.get(name)
    assert check_type is not None
    with pytest.raises(ValueError):
        check_type.adapter.validate_python(-1)


# --------------------------------------------------------------------------- regex, equals, contains


def test_regex_searches_case_sensitively() -> None:
    found = run_one("regex", r"X-\d+", "created X-42 today")
    assert found.passed is True
    assert found.message == r"regex 'X-\\d+' found in the response"
    assert run_one("regex", r"X-\d+", "created x-42 today").passed is False
    assert run_one("regex", "^created", "created X-42").passed is True
    assert run_one("regex", "^X", "created X-42").passed is False
    missing = run_one("regex", "zzz", "abc")
    assert missing.message == "regex 'zzz' not found in the response"


@pytest.mark.parametrize("check", ["match", "not_match"])
@pytest.mark.parametrize(
    ("pattern", "problem"),
    [("(?P<x", "missing >"), ("^(foo", "missing )"), (".*[z-a].*", "bad character range"), ("x{2", None)],
)
def test_a_pattern_written_as_a_broken_regex_is_refused(
    check: str, pattern: str, problem: str | None
) -> None:
    """Read as a glob, it would match nothing (and a not_match with it would always pass)."""
    found = REGISTRY.get(check)
    assert found is not None
    if problem is None:  # no regex construct: a literal glob
        assert found.adapter.validate_python(pattern) == pattern
        return
    expected = f"reads as a regular expression but is not a valid one ({problem}"
    with pytest.raises(ValueError, match=re.escape(expected)):
        found.adapter.validate_python(pattern)


@pytest.mark.parametrize("pattern", ["*(?)*", "*[a-z]*", "*price: $*", "a*(?"])
def test_a_glob_with_regex_characters_stays_a_glob(pattern: str) -> None:
    match = REGISTRY.get("match")
    assert match is not None and match.adapter.validate_python(pattern) == pattern
    assert not is_regex_pattern(pattern)


def test_regex_rejects_an_invalid_expression() -> None:
    regex = REGISTRY.get("regex")
    assert regex is not None
    with pytest.raises(ValueError, match="not a valid regular expression"):
        regex.adapter.validate_python("(unclosed")


def test_equals_ignores_outer_whitespace_only() -> None:
    assert run_one("equals", "4", "  4\n").passed is True
    assert run_one("equals", " 4 ", "4").passed is True
    assert run_one("equals", "4", "4.").passed is False
    assert run_one("equals", "Four", "four").passed is False  # case matters
    assert run_one("equals", "a b", "a  b").passed is False  # inner whitespace matters
    assert run_one("equals", "", "  ").passed is True
    assert run_one("equals", "4", "4").message == "response equals '4' (ignoring outer whitespace)"
    assert run_one("equals", "4", "5").message == "response does not equal '4' (ignoring outer whitespace)"


def test_contains_is_case_insensitive() -> None:
    assert run_one("contains", "Paris", "the capital is PARIS.").passed is True
    assert run_one("contains", "straße", "STRASSE").passed is True  # casefold, not lower
    assert run_one("contains", "Lyon", "the capital is Paris.").passed is False
    assert run_one("contains", "*", "a * b").passed is True  # no glob here
    assert run_one("contains", "x", "x").message == "response contains 'x' (case-insensitive)"
    assert run_one("contains", "x", "y").message == "response does not contain 'x' (case-insensitive)"


NFC, NFD = "Café crème", "Cafe\u0301 cre\u0300me"  # composed, and decomposed as macOS tools write it


@pytest.mark.parametrize("expected", [NFC, NFD])
@pytest.mark.parametrize("answer", [NFC, NFD])
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("contains", "{}"),
        ("equals", "{}"),
        ("match", "*{}*"),
        ("match", "^{}$"),
        ("regex", "{}"),
        ("json", {"path": "a", "equals": "{}"}),
        ("json", {"path": "a", "matches": "{}"}),
    ],
)
def test_text_checks_compare_what_looks_the_same_as_the_same(
    name: str, value: Any, answer: str, expected: str
) -> None:
    """Text in Unicode's composed form (NFC) equals its decomposed form (NFD)."""
    if isinstance(value, dict):
        value = {key: item.format(expected) if key != "path" else item for key, item in value.items()}
        text = json.dumps({"a": answer}, ensure_ascii=False)
    else:
        value, text = value.format(expected), answer
    assert run_one(name, value, text).passed is True
    assert run_one("not_match", f"*{expected}*", answer).passed is False


@pytest.mark.parametrize("name", ["contains", "equals", "match", "regex"])
def test_text_checks_take_crlf_line_ends_for_line_feeds(name: str) -> None:
    assert run_one(name, "two\nlines", "two\r\nlines").passed is True


CRLF, DECOMPOSED = "line1\r\nline2\r\n", "cafe\u0301"  # what the canonical form changes


@pytest.mark.parametrize(
    ("name", "value", "answer"),
    [
        ("regex", r"\r\n", CRLF),
        ("regex", r"e\u0301", DECOMPOSED),
        ("match", r"(?s).*\r.*", CRLF),
        ("match", r"(?:e\u0301)", DECOMPOSED),
        ("json", {"path": "a", "matches": r"^line1\r\n"}, json.dumps({"a": CRLF})),
        ("json", {"path": "a", "matches": r"(?:e\u0301)"}, json.dumps({"a": DECOMPOSED})),
    ],
)
def test_a_regex_is_found_in_the_answer_as_it_came(name: str, value: Any, answer: str) -> None:
    """A regex that spells as an escape what the canonical form changes (``\\r``, a combining
    accent) is found in the answer as it came, and a ``not_match`` forbidding it fails; one that
    neither form holds is not found."""
    assert run_one(name, value, answer).passed is True
    if name == "match":
        assert run_one("not_match", value, answer).passed is False
        assert run_one("match", value, "line1\nline2 caf\xe9").passed is False
        assert run_one("not_match", value, "line1\nline2 caf\xe9").passed is True
    if name == "regex":
        assert run_one(name, value, "line1\nline2 caf\xe9").passed is False


def test_a_tool_call_argument_regex_is_found_in_the_argument_as_it_came() -> None:
    made = (ToolCallRecord(tool="search", args={"q": DECOMPOSED}),)
    value = {"name": "(?:search)", "args": {"q": r"(?:e\u0301)"}}
    assert check("tool_called", value).run(Response("", tool_calls=made)).passed is True
    value = {"name": "search", "args": {"q": "caf\xe9"}}  # a literal: compared composed
    assert check("tool_called", value).run(Response("", tool_calls=made)).passed is True


def test_the_answer_is_put_in_its_canonical_form_once_for_all_its_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    normalized: list[str] = []
    normalize = unicodedata.normalize

    def counting(form: str, text: str) -> str:
        normalized.append(text)
        return normalize(form, text)

    monkeypatch.setattr(unicodedata, "normalize", counting)
    answer = "Cafe\u0301\r\ncre\u0300me " + "x" * 100
    checks = [
        check(name, value)
        for name, value in [
            ("contains", "café"),
            ("equals", "x"),
            ("match", "café*"),
            ("not_match", "*thé*"),
            ("regex", "crème"),
            ("match", ".*x{3}"),
            ("min_tokens", 1),
        ]
    ]
    verdict, _ = run_checks(checks, Response(answer))
    assert verdict is False  # equals
    assert sum(text.startswith("Cafe") for text in normalized) == 1


def test_a_combining_accent_is_no_token_of_its_own() -> None:
    assert count_tokens(NFD) == count_tokens(NFC) == 2


# --------------------------------------------------------------------------- three-valued logic


def test_unavailable_check_is_undecided() -> None:
    result = pending().run(Response("hi"))
    assert result.passed is None
    assert "`pending`" in result.message
    assert "not available" in result.message
    judge = run_one("llm_judge", {"criteria": "is polite"}, "hi")  # a response without a judge
    assert judge.passed is None
    assert judge.message == "llm_judge: no judge configuration for this eval"


def test_list_with_unavailable_and_failing_check_fails() -> None:
    verdict, results = run_checks([pending(), check("match", "*4*")], Response("five"))
    assert verdict is False
    assert [r.passed for r in results] == [None, False]


def test_list_with_unavailable_and_passing_checks_is_undecided() -> None:
    checks = [pending(), check("match", "*4*"), check("min_tokens", 1)]
    verdict, results = run_checks(checks, Response("4"))
    assert verdict is None
    reasons = [reason for r in results for reason in r.undecided_reasons()]
    assert len(reasons) == 1
    assert reasons[0].startswith("the `pending` check is not available")


def test_list_of_passing_checks_passes_and_empty_list_passes() -> None:
    assert run_checks([check("match", "*4*"), check("max_tokens", 3)], Response("4"))[0] is True
    assert run_checks([], Response("anything")) == (True, [])


def test_any_of_passes_when_one_alternative_passes() -> None:
    node = AnyOf((pending(), check("match", "*4*")))
    result = node.run(Response("it is 4"))
    assert result.passed is True
    assert result.type == "or"
    assert result.message == "alternative 2 of 2 passed"
    assert [c.passed for c in result.children] == [None, True]
    assert result.undecided_reasons() == []


def _broken(value: str, response: Response) -> Verdict:
    raise JudgeError(f"llm_judge: the judge failed: {value}")


BROKEN = CheckType("broken", NonEmptyStr, _broken, "a check whose judge fails")


def broken(why: str = "down") -> Check:
    return Check(BROKEN, why)


def test_any_of_stops_at_the_first_alternative_that_passes() -> None:
    """The alternatives after it are not run (a judge there is not asked, nor can its error matter)."""
    result = AnyOf((check("match", "*hello*"), broken(), pending())).run(Response("hello there"))
    assert result.passed is True and not result.error
    assert result.message == "alternative 1 of 3 passed; the later ones were not run"
    assert [c.type for c in result.children] == ["match"]


def test_an_alternative_that_could_not_run_does_not_matter_when_a_later_one_passes() -> None:
    verdict, [result] = run_checks([AnyOf((broken(), check("match", "*hello*")))], Response("hello"))
    assert verdict is True and result.passed is True
    assert [(c.passed, c.error) for c in result.children] == [(None, True), (True, False)]
    assert result.children[0].message == "llm_judge: the judge failed: down"


def test_an_or_whose_alternatives_fail_or_could_not_run_is_an_error_keeping_the_results() -> None:
    with pytest.raises(ChecksError) as info:
        run_checks([check("min_tokens", 1), AnyOf((check("match", "*bye*"), broken()))], Response("hi"))
    assert str(info.value) == "llm_judge: the judge failed: down"
    first, either = info.value.results
    assert first.passed is True
    assert (either.passed, either.error, either.message) == (
        None,
        True,
        "no alternative passed and 1 could not run",
    )
    assert [(c.passed, c.error) for c in either.children] == [(False, False), (None, True)]
    assert either.undecided_reasons() == []


def test_a_list_with_a_check_that_could_not_run_is_an_error_keeping_the_results() -> None:
    with pytest.raises(ChecksError) as info:
        run_checks([check("match", "*bye*"), broken("first"), broken("second")], Response("hi"))
    assert str(info.value) == "llm_judge: the judge failed: first"
    assert [(r.type, r.passed, r.error) for r in info.value.results] == [
        ("match", False, False),
        ("broken", None, True),
        ("broken", None, True),
    ]


def test_any_of_fails_only_when_every_alternative_fails() -> None:
    node = AnyOf((check("match", "*4*"), check("contains", "four")))
    result = node.run(Response("five"))
    assert result.passed is False
    assert result.message == "no alternative passed"


def test_any_of_with_failures_and_an_unavailable_check_is_undecided() -> None:
    node = AnyOf((check("match", "*4*"), pending()))
    result = node.run(Response("five"))
    assert result.passed is None
    assert result.message == "no alternative passed and some could not be decided"
    reasons = result.undecided_reasons()
    assert len(reasons) == 1
    assert "`pending`" in reasons[0]


def test_nested_any_of_inside_a_list() -> None:
    undecided = AnyOf((check("match", "*4*"), pending()))
    verdict, results = run_checks([check("min_tokens", 1), undecided], Response("five"))
    assert verdict is None
    assert results[1].undecided_reasons() == [results[1].children[1].message]
    # ... but a failing sibling decides the list
    verdict, _ = run_checks([check("max_tokens", 0), undecided], Response("five"))
    assert verdict is False


def test_check_result_to_json() -> None:
    result = AnyOf((check("match", "*4*"),)).run(Response("4"))
    assert result.to_json() == {
        "type": "or",
        "passed": True,
        "message": "alternative 1 of 1 passed",
        "children": [{"type": "match", "passed": True, "message": "pattern '*4*' matches the response"}],
    }


# --------------------------------------------------------------------------- registry


def test_registry_holds_the_builtins() -> None:
    assert REGISTRY.names() == [t.name for t in BUILTIN_CHECKS]
    assert REGISTRY.as_mapping() == {t.name: t for t in BUILTIN_CHECKS}
    assert set(REGISTRY.names()) >= {"match", "not_match", "min_tokens", "max_tokens", "semantic"}
    assert "or" not in REGISTRY.names()
    assert REGISTRY.get("nope") is None
    assert REGISTRY.as_mapping()["match"].name == "match"


def test_registry_rejects_a_duplicate() -> None:
    registry = CheckRegistry()
    duplicate = CheckType("match", str, lambda value, response: Verdict(True, "ok"), "again")
    with pytest.raises(ValueError, match="'match' is already registered"):
        registry.register(duplicate)
    assert registry.get("match") is not duplicate


def test_registry_refuses_or() -> None:
    registry = CheckRegistry(types=())
    with pytest.raises(ValueError, match="'or' is reserved"):
        registry.register(CheckType("or", str, None, "combinator"))
    assert registry.names() == []


def test_registry_accepts_a_new_check_type() -> None:
    registry = CheckRegistry()

    def shouting(value: bool, response: Response) -> Verdict:
        loud = response.text.isupper()
        return Verdict(loud == value, "loud" if loud else "quiet")

    registry.register(CheckType("shouting", bool, shouting, "response is upper case"))
    check_type = registry.get("shouting")
    assert check_type is not None
    assert Check(check_type, True).run(Response("HI")) == CheckResult("shouting", True, "loud")
    assert Check(check_type, True).run(Response("hi")) == CheckResult("shouting", False, "quiet")
    assert CheckRegistry().get("shouting") is None  # registries do not share state


def test_compile_pattern_is_whole_text_dotall_ignorecase() -> None:
    compiled = compile_pattern("a*b")
    assert compiled.flags & re.IGNORECASE
    assert compiled.flags & re.DOTALL
    assert compiled.fullmatch("A\nB")


def test_the_names_of_the_check_types_imported_at_first_use_are_those_of_their_modules() -> None:
    from pytest_vibeeval.custom_checks import CUSTOM_CHECKS
    from pytest_vibeeval.structural_checks import STRUCTURAL_CHECKS

    assert tuple(t.name for t in STRUCTURAL_CHECKS) == STRUCTURAL_CHECK_NAMES
    assert tuple(t.name for t in CUSTOM_CHECKS) == CUSTOM_CHECK_NAMES
    assert not any(t.uses_workdir for t in structural_checks())  # they decide from the response alone
