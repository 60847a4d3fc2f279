"""The HTTP provider's bounds, against real servers on 127.0.0.1: ``timeout`` is a deadline for the
whole answer (a body trickling in is cut off at it), a body larger than ``max_output_bytes`` is an
error naming the cap, and after a redirect an error names the URL that answered."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from helpers import big, redirect_to, refuse, serving, trickle

from pytest_vibeeval.loading.templates import Renderer, TemplateValues
from pytest_vibeeval.models import Configuration
from pytest_vibeeval.providers import PromptRequest, ProviderError
from pytest_vibeeval.providers.http import HttpProvider


def ask(url: str, **config: Any) -> None:
    spec = {"http": {"base_url": url, "max_retries": 0, "api_key_env": "VIBE_TEST_HTTP_KEY"}, **config}
    http = HttpProvider("c", Configuration.model_validate(spec), set(), None)
    try:
        http.answer(PromptRequest("hi", "m/ok", None, "suite", "e", "c", Path(".")))
    finally:
        http.close()


def test_the_timeout_is_a_deadline_for_the_whole_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIBE_TEST_HTTP_KEY", "k")
    with serving(trickle) as (url, _):
        started = time.monotonic()
        with pytest.raises(ProviderError) as info:
            ask(url, timeout=1000)
        took = time.monotonic() - started
    assert "no answer from" in info.value.message and "within 1 s" in info.value.message
    assert "its body was still arriving (the timeout covers the whole answer)" in info.value.message
    assert took < 10, took  # not the minute the body would take: each read alone is quick


@pytest.mark.parametrize("announce", [True, False], ids=["content-length", "unannounced"])
def test_a_body_larger_than_max_output_bytes_is_an_error_naming_the_cap(
    monkeypatch: pytest.MonkeyPatch, announce: bool
) -> None:
    monkeypatch.setenv("VIBE_TEST_HTTP_KEY", "k")
    with serving(big(2_000_000, announce)) as (url, _), pytest.raises(ProviderError) as info:
        ask(url, max_output_bytes=100_000)
    message = info.value.message
    assert "more than max_output_bytes (100000)" in message, message
    assert "raise `max_output_bytes` in configuration 'c'" in message


def test_after_a_cross_origin_redirect_the_error_names_the_url_that_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VIBE_TEST_HTTP_KEY", "sk-redirect-secret")

    with (
        serving(refuse) as (other, other_seen),
        serving(redirect_to(f"{other}/elsewhere")) as (first, _),
        pytest.raises(ProviderError) as info,
    ):
        ask(first)
    assert info.value.message.startswith(f"HTTP 400 from {other}/elsewhere: nope"), info.value.message
    assert "Authorization" not in other_seen[0] and "authorization" not in other_seen[0]  # key not sent on


def test_configured_headers_are_filled_masked_and_not_sent_to_another_origin() -> None:
    renderer = Renderer(TemplateValues(environ={"VIBE_SECRET_XK": "xk-header-secret-42"}))
    spec = {"http": {"base_url": "", "max_retries": 0, "headers": {"X-Api-Key": "{{secret('xk')}}"}}}
    with (
        serving(refuse) as (other, other_seen),
        serving(redirect_to(f"{other}/elsewhere")) as (first, first_seen),
    ):
        spec["http"]["base_url"] = first
        config = Configuration.model_validate(spec)
        http = HttpProvider("c", config, renderer.used_secrets, None, renderer=renderer)
        try:
            with pytest.raises(ProviderError):
                http.answer(PromptRequest("hi", "m/ok", None, "suite", "e", "c", Path(".")))
        finally:
            http.close()
    assert first_seen[0]["X-Api-Key"] == "xk-header-secret-42"  # filled in, not sent as written
    assert "X-Api-Key" not in other_seen[0]  # not forwarded to the redirect's other origin
    assert renderer.redactor()("key xk-header-secret-42") == "key [secret]"
    unset = Renderer(TemplateValues(environ={}))
    missing = HttpProvider("c", Configuration.model_validate(spec), set(), None, renderer=unset)
    assert missing.unavailable_reason() == (
        "configuration 'c': http.headers: template secret 'xk' has no value: "
        "set the environment variable VIBE_SECRET_XK"
    )


@pytest.mark.parametrize("name", ["Authorization", "proxy-authorization", "Cookie", "X-Goog-Api-Key"])
def test_a_literal_credential_header_is_a_secret(name: str) -> None:
    """An Authorization or Cookie header written in the file carries a credential whatever its
    value looks like: it is masked like a key."""
    spec = {"http": {"base_url": "http://127.0.0.1:9", "headers": {name: "Basic dXNlcjpwYXNzd29yZA=="}}}
    secrets: set[str] = set()
    http = HttpProvider("c", Configuration.model_validate(spec), secrets, None)
    try:
        http._headers()
    finally:
        http.close()
    assert "Basic dXNlcjpwYXNzd29yZA==" in secrets
