"""The one escaping function: exhaustive by Unicode category, over the whole code-point range."""

from __future__ import annotations

import json
import sys
import unicodedata
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from telemetry.text import HIDDEN_CATEGORIES, json_visible, visible

ANY_CODE_POINT = st.characters(min_codepoint=0, max_codepoint=sys.maxunicode, codec=None)


def _unescape(shown: str) -> str:
    return shown.encode("latin-1", "backslashreplace").decode("unicode_escape")


@settings(max_examples=500)
@given(st.text(alphabet=ANY_CODE_POINT, max_size=40))
def test_every_hidden_code_point_is_escaped_and_nothing_else_changes(text: str) -> None:
    shown = visible(text)
    for char in shown:
        assert unicodedata.category(char) not in HIDDEN_CATEGORIES, repr(char)
    shown.encode("utf-8")  # a lone surrogate never survives
    if "\\" not in text:  # without a backslash of its own, the escapes read back exactly
        assert _unescape(shown) == text


@settings(max_examples=300)
@given(st.text(alphabet=ANY_CODE_POINT, max_size=40))
def test_shown_text_is_well_formed_xml(text: str) -> None:
    element = ET.Element("failure", message=visible(text))
    element.text = visible(text)
    ET.fromstring(ET.tostring(element, encoding="unicode"))


@settings(max_examples=300)
@given(st.text(alphabet=ANY_CODE_POINT, max_size=40))
def test_json_text_reads_back_as_the_same_string(text: str) -> None:
    document = json_visible(json.dumps({"reason": text}, ensure_ascii=False))
    for char in document:
        assert char in "\n" or unicodedata.category(char) not in HIDDEN_CATEGORIES
    assert json.loads(document)["reason"] == text


def test_every_code_point_of_a_hidden_category_is_hidden() -> None:
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        hidden = unicodedata.category(char) in HIDDEN_CATEGORIES
        assert (visible(char) != char) == hidden, hex(code)


def test_the_cases_a_battery_found() -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J\u061c\u2060\u2064\U000e0041\u00ad\ufffe\uffff\ud800"
    assert visible(hostile) == (
        "\\x1b]0;pwned\\x07\\x1b[2J\\u061c\\u2060\\u2064\\U000e0041\\xad\\ufffe\\uffff\\ud800"
    )
    assert visible("CartPole-v1 · 日本語 é ✓") == "CartPole-v1 · 日本語 é ✓"


def test_a_count_is_written_one_way_for_ppo_and_sanctum() -> None:
    import ppo.cli.run
    import sanctum.formatting
    from telemetry.text import plural

    assert (plural(1, "update"), plural(0, "update"), plural(3, "step")) == (
        "1 update",
        "0 updates",
        "3 steps",
    )
    assert sanctum.formatting.plural is plural and ppo.cli.run.plural is plural  # one home
