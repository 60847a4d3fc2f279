"""Answer prompts through an OpenAI-compatible chat-completions endpoint (OpenRouter by default).

Retries 429, 5xx and connection errors with exponential backoff and jitter, honouring
``Retry-After``, a bounded number of times; a configuration's ``max_concurrency`` holds across
xdist workers (:class:`~pytest_vibeeval.slots.Slots`). The API key is read from the environment,
sent only in the ``Authorization`` header, and added to the session's secrets so that no output
shows it.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import httpx

from ..limits import RETRY_AFTER_CAP_S, backoff_ceiling
from ..loading.templates import MissingValue, Renderer
from ..masking import is_secret_name, keep_start
from ..models import Configuration, HttpSpec
from ..slots import Slots
from ..surrogates import loads
from .base import PromptRequest, ProviderError, ProviderResponse, as_measure, without_token
from .http_clients import KEPT_OPEN, certificates
from .mcp_tools import McpTarget, answer_with_tools, sdk_missing_reason

OPENROUTER_URL = "https://openrouter.ai/api/v1"
OPENROUTER_BASE_ENV = "OPENROUTER_BASE_URL"
OPENROUTER_KEY_ENV = "OPENROUTER_API_KEY"
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
ERROR_EXCERPT = 300


def _excerpt(text: str) -> str:
    return keep_start(" ".join(text.split()), ERROR_EXCERPT)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds to wait (a number of seconds, or an HTTP date: 0 once it has
    passed), or None when there is none or it is no such value (NaN, infinite, negative)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(when.timestamp() - (time.time() if now is None else now), 0.0)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def backoff_seconds(attempt: int, rng: Callable[[], float] = random.random) -> float:
    """Full-jitter exponential backoff: a random wait up to ``base × 2^attempt`` (capped)."""
    return backoff_ceiling(attempt) * (0.5 + rng() / 2)


# Headers that carry credentials whatever their value looks like (besides *KEY*, *TOKEN*, … names).
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


class HttpProvider:
    """``config`` None is the implicit configuration of a suite without any: OpenRouter with the
    suite's model. ``lock_dir`` holds the concurrency slots shared with the other workers."""

    uses_workdir = False  # it writes no files

    def __init__(
        self,
        config_id: str,
        config: Configuration | None,
        secrets: set[str],
        lock_dir: Path | None,
        sleep: Callable[[float], None] = time.sleep,
        renderer: Renderer | None = None,
    ) -> None:
        self.config_id = config_id
        self.config = config
        self.spec = config.http if config is not None and config.http is not None else HttpSpec()
        self.secrets = secrets
        self.sleep = sleep
        spec = self.spec
        self.openrouter = spec.base_url is None
        self.renderer = renderer
        # As written: {{var()}} templates are filled when the URL is used (the environment a
        # conftest.py set then).
        self.written_url = (spec.base_url or os.environ.get(OPENROUTER_BASE_ENV) or OPENROUTER_URL).rstrip(
            "/"
        )
        if spec.api_key_env is not None:
            self.key_env: str | None = spec.api_key_env or None
        else:
            self.key_env = OPENROUTER_KEY_ENV if self.openrouter else None
        self.timeout_s = config.timeout_s if config is not None else 300.0
        self.max_bytes: int = (
            config.max_output_bytes
            if config is not None
            else Configuration.model_fields["max_output_bytes"].default
        )
        self.slots = None
        if spec.max_concurrency is not None and lock_dir is not None:
            self.slots = Slots(lock_dir, f"http-{config_id}", spec.max_concurrency)
        self._client: httpx.Client | None = None

    @property
    def base_url(self) -> str:
        """The endpoint's base URL, its templates filled (MissingValue when one has no value)."""
        if self.renderer is None or "{{" not in self.written_url:
            return self.written_url
        return self.renderer.render(self.written_url).rstrip("/")

    def unavailable_reason(self) -> str | None:
        try:
            self.base_url  # noqa: B018 (a template without a value skips the eval, saying which)
        except MissingValue as exc:
            return f"configuration {self.config_id!r}: http.base_url: {exc}"
        try:
            self._headers()
        except MissingValue as exc:
            return f"configuration {self.config_id!r}: http.headers: {exc}"
        if self.key_env and not os.environ.get(self.key_env):
            return f"set {self.key_env}: configuration {self.config_id!r} calls {self.base_url}"
        return None

    def _headers(self) -> dict[str, str]:
        """The request's headers: the configured ones with their templates filled (a secret-looking
        one's value is masked in every output), and the key's Authorization."""
        headers = {"Content-Type": "application/json"}
        for name, value in self.spec.headers.items():
            headers[name] = self.renderer.render(value) if self.renderer is not None else value
            if name.lower() in CREDENTIAL_HEADERS or is_secret_name(name):
                self.secrets.add(headers[name])
        if self.key_env:
            key = os.environ.get(self.key_env, "")
            self.secrets.add(key)  # redacted from every output from now on
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def body(self, request: PromptRequest) -> dict[str, Any]:
        """The chat-completions request for ``request``."""
        config = self.config
        system = self.sent_system_prompt(request)
        messages = [{"role": "system", "content": system}] if system else []
        messages.extend(request.messages)  # the earlier turns of a conversation, then this prompt
        model = (config.model if config is not None else None) or request.model
        body: dict[str, Any] = {"model": model, "messages": messages}
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        if self.openrouter:
            body["usage"] = {"include": True}  # OpenRouter reports the cost only when asked
        body.update(self.spec.params)
        return body

    def sent_system_prompt(self, request: PromptRequest) -> str | None:
        """The system prompt sent with ``request``: the configuration's own, else the suite's (an
        llm_judge's grading instructions are sent as they are)."""
        own = self.config.system_prompt if self.config is not None and not request.grading else None
        return own or request.system_prompt

    def cache_material(self, request: PromptRequest) -> dict[str, Any]:
        """What an answer depends on (its key: :mod:`..answer_keys`): the request body (model,
        messages, temperature, params), the extra headers as written and the MCP server; not the
        endpoint, which says where the request goes, not what it asks."""
        return {
            "kind": "http",
            "body": self.body(request),
            "headers": self.spec.headers,
            "mcp_server": without_token(request.mcp_server),
        }

    def client(self) -> httpx.Client:
        """This provider's client; its connections stay open for the next answer while few other
        providers' do (:mod:`.http_clients`)."""
        if self._client is None:
            self._client = httpx.Client(
                verify=certificates(),
                timeout=httpx.Timeout(self.timeout_s),
                follow_redirects=True,
                event_hooks={"request": [self._drop_headers_elsewhere]},
            )
        KEPT_OPEN.use(self)
        return self._client

    def _drop_headers_elsewhere(self, request: httpx.Request) -> None:
        """A redirect to another origin gets none of the configured headers (httpx drops only
        Authorization): they may hold credentials for this endpoint alone."""
        here = httpx.URL(self.base_url)
        if (request.url.scheme, request.url.host, request.url.port) != (here.scheme, here.host, here.port):
            for name in self.spec.headers:
                request.headers.pop(name, None)

    def answer(self, request: PromptRequest) -> ProviderResponse:
        url = f"{self.base_url}/chat/completions"
        body = self.body(request)
        if request.mcp_server:
            return self._answer_with_tools(url, body, McpTarget.from_request(request.mcp_server))
        with self._slot():
            data = self._post(url, body)
        return parse_completion(data, url)

    def _answer_with_tools(self, url: str, body: dict[str, Any], target: McpTarget) -> ProviderResponse:
        """The model ⇄ MCP tool loop (:mod:`.mcp_tools`); each model call holds a slot of its own."""
        missing = sdk_missing_reason()
        if missing:
            raise ProviderError(missing)
        if target.token:
            self.secrets.add(target.token)
        import anyio  # with the MCP SDK, which needs it

        def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
            with self._slot():
                return self._post(url, {**body, "messages": messages, "tools": tools})

        return anyio.run(
            answer_with_tools,
            target,
            list(body["messages"]),
            chat,
            lambda data: parse_completion(data, url),
            self.timeout_s,
        )

    def _slot(self) -> Any:
        return self.slots.hold() if self.slots is not None else nullcontext()

    def _post(self, url: str, body: dict[str, Any]) -> Any:
        """POST with retries; the decoded JSON of a 2xx answer, or ProviderError."""
        attempts = self.spec.max_retries + 1
        problem = ""
        for attempt in range(attempts):
            wait: float | None = None
            try:
                response = self._fetch(url, body)
            except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:  # no retry can help
                raise ProviderError(f"invalid URL {url!r}: {exc}; check `http.base_url`") from None
            except httpx.TimeoutException:
                problem = f"no answer from {url} within {self.timeout_s:g} s"
            except _DeadlinePassed as exc:
                problem = (
                    f"no answer from {exc.url} within {self.timeout_s:g} s: its body was still arriving "
                    "(the timeout covers the whole answer)"
                )
            except httpx.TransportError as exc:
                problem = f"cannot reach {url}: {type(exc).__name__}: {exc}"
            else:
                answered = str(response.url)  # after redirects: the URL that answered
                if response.is_success:
                    try:
                        return loads(response.content)
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        raise ProviderError(
                            f"{answered} answered {response.status_code} with a body that is not JSON: "
                            f"{_excerpt(response.text)!r}"
                        ) from None
                if response.status_code not in RETRY_STATUSES:
                    raise ProviderError(self._http_error(answered, response, body))
                problem = self._http_error(answered, response, body)
                wait = retry_after_seconds(response.headers.get("Retry-After"))
                if wait is not None and wait > RETRY_AFTER_CAP_S and attempt + 1 < attempts:
                    raise ProviderError(_too_long_a_wait(response.status_code, wait, problem))
            if attempt + 1 < attempts:
                self.sleep(wait if wait is not None else backoff_seconds(attempt))
        raise ProviderError(f"{problem} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})")

    def _fetch(self, url: str, body: dict[str, Any]) -> httpx.Response:
        """POST and read the whole answer within ``timeout`` (a total deadline, not one per read: a
        body trickling in is cut off) and at most ``max_output_bytes``; ProviderError when larger."""
        deadline = time.monotonic() + self.timeout_s
        with self.client().stream("POST", url, json=body, headers=self._headers()) as response:
            answered = str(response.url)
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise ProviderError(self._too_large(answered, f"announced {declared} bytes"))
            chunks, size = [], 0
            for chunk in response.iter_bytes():  # decoded: a gzip bomb meets the cap too
                size += len(chunk)
                if size > self.max_bytes:
                    raise ProviderError(self._too_large(answered, f"sent more than {self.max_bytes} bytes"))
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise _DeadlinePassed(answered)
        headers = [(k, v) for k, v in response.headers.items() if k.lower() != "content-encoding"]
        return httpx.Response(
            response.status_code, headers=headers, content=b"".join(chunks), request=response.request
        )

    def _too_large(self, url: str, what: str) -> str:
        return (
            f"{url} {what}, more than max_output_bytes ({self.max_bytes}); raise `max_output_bytes` in "
            f"configuration {self.config_id!r} if an answer that large is expected"
        )

    def _http_error(self, url: str, response: httpx.Response, body: dict[str, Any]) -> str:
        status = response.status_code
        detail = _server_message(response)
        text = f"HTTP {status} from {url}" + (f": {detail}" if detail else "")
        if status in (401, 403):
            where = f"the key in {self.key_env}" if self.key_env else "the endpoint's authentication"
            text += f"; check {where}"
        elif status == 404:
            text += f"; check the model {body.get('model')!r} and the base URL {self.base_url}"
        elif status == 400 and "model" in detail.lower():
            text += f"; check the model {body.get('model')!r}"
        return text

    def close_connections(self) -> None:
        """Close the client and its connections; the next answer opens a new one."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def close(self) -> None:
        KEPT_OPEN.forget(self)
        self.close_connections()


def _too_long_a_wait(status: int, wait: float, problem: str) -> str:
    """Why a retry the server asked to wait too long for is not made (the eval's time is bounded:
    see :mod:`..limits`)."""
    what = "rate limited" if status == 429 else "unavailable"
    return (
        f"{what} ({status}): the server asked to wait {wait:g} s (Retry-After), more than the "
        f"{RETRY_AFTER_CAP_S:g} s an eval waits between attempts, so it was not retried: {problem}"
    )


class _DeadlinePassed(Exception):
    """The answer did not arrive completely within the configuration's timeout."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


def _server_message(response: httpx.Response) -> str:
    """The server's own error message (OpenAI style ``{"error": {"message": …}}``) or body excerpt."""
    try:
        data = loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _excerpt(response.text)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _excerpt(error["message"])
        if isinstance(error, str):
            return _excerpt(error)
    return _excerpt(response.text)


def parse_completion(data: Any, url: str) -> ProviderResponse:
    """The answer text, why the model stopped, and the usage of a chat-completions response;
    ProviderError if malformed, or when the model refused or a content filter withheld the answer."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
        text = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ProviderError(
            f"{url} answered without choices[0].message: {_excerpt(json.dumps(data))!r}"
        ) from None
    if text is None:
        text = ""
    if not isinstance(text, str):  # content parts
        text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
    reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    reason = reason if isinstance(reason, str) else None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    values = _usage(data.get("usage") if isinstance(data, dict) else None, url)
    if not text.strip() and ((isinstance(refusal, str) and refusal.strip()) or reason == "content_filter"):
        spent = ProviderResponse(
            "",
            values.get("cost"),
            values.get("input_tokens"),
            values.get("output_tokens"),
            cached_input_tokens=values.get("cached_input_tokens"),
            finish_reason=reason,
        )
        if isinstance(refusal, str) and refusal.strip():
            raise ProviderError(
                f"the model refused to answer (message.refusal): {_excerpt(refusal)!r}", spent=spent
            )
        raise ProviderError(
            f"{url} withheld the answer: its content filter stopped it (finish_reason: content_filter)",
            spent=spent,
        )
    return ProviderResponse(
        text,
        values.get("cost"),
        values.get("input_tokens"),
        values.get("output_tokens"),
        cached_input_tokens=values.get("cached_input_tokens"),
        finish_reason=reason,
    )


def _usage(usage: Any, url: str) -> dict[str, Any]:
    """The measures of a chat completion's ``usage``: tokens (those read from the prompt cache,
    ``prompt_tokens_details.cached_tokens``, among them) and the cost."""
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    values: dict[str, Any] = {}
    for key, value, field, whole in (
        ("prompt_tokens", usage.get("prompt_tokens"), "input_tokens", True),
        ("completion_tokens", usage.get("completion_tokens"), "output_tokens", True),
        ("prompt_tokens_details.cached_tokens", cached, "cached_input_tokens", True),
        ("cost", usage.get("cost"), "cost", False),
    ):
        if value is None:
            continue
        try:
            values[field] = as_measure(value, whole=whole)
        except ValueError as exc:
            raise ProviderError(f"{url} reported usage.{key} = {value!r}, not {exc}") from None
    return values
