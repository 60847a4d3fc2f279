"""JSON with comments as gemini reads its settings.json (:mod:`pytest_vibeeval.json_comments`)."""

from __future__ import annotations

import json

import pytest

from pytest_vibeeval.json_comments import strip_json_comments


@pytest.mark.timeout(30)
def test_a_file_cut_off_inside_a_string_is_scanned_once() -> None:
    """A settings file cut off inside a string full of escaped quotes: the unclosed string runs to
    the end of the text (as in strip-json-comments), instead of every escaped quote starting a new
    scan to the end (minutes for 200 KB; the settings file may hold 16 MiB). The JSON error is the
    one the text has without comments."""
    text = '{"mcpServers": {}, // servers\n "note": "' + 'say \\"hi\\" ' * 20_000
    stripped = strip_json_comments(text)
    assert len(stripped) == len(text)
    assert stripped.startswith('{"mcpServers": {},           \n "note": "say')
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(stripped)
    assert raised.value.msg == "Unterminated string starting at"
    assert (raised.value.lineno, raised.value.colno) == (2, 10)


@pytest.mark.parametrize("inside", ["\x1c", "\x1f", "\x85", "\u2028", "\xa0", "\t"])
def test_every_character_of_a_comment_but_its_line_ends_is_blanked(inside: str) -> None:
    """A comment is dropped whatever it holds: a character Python counts as a space but JSON
    does not (a file separator, NEL, a no-break space) would otherwise stay and break the JSON."""
    text = f'{{"a": 1 /* x{inside}y */, // z{inside}\n"b": 2}}'
    assert json.loads(strip_json_comments(text)) == {"a": 1, "b": 2}
    assert strip_json_comments(text).count("\n") == 1
