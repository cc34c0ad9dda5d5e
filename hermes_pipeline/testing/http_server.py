"""The one HTTP server of the fakes: routes on 127.0.0.1, every request recorded.

A route is a method and a path (an exact string, or a pattern whose named groups
the handler reads in `request.params`) mapped to a handler, which takes the
`Request` and returns a `Reply`; `json_reply` and `sse_reply` build the two kinds
the APIs send. Routes are tried in order, and a request no route takes goes to
`fallback` (a JSON 404 unless the fake gives its own). Each fake here
(fake_provider, fake_agent_api, fake_responses, fake_weather) is a set of routes
on a server of its own:

    server = LoopbackServer([Route("POST", "/v1/messages", handler)])
    with server:
        ... server.base_url ...       # http://127.0.0.1:<free port>
        server.requests                # [Request], in arrival order

The tests start and stop it themselves (port 0 picks a free port). Only the
standard library is used, so it ships with the package; the product never
imports it.
"""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable
from urllib.parse import urlsplit

ANY_PATH = re.compile(r".*")
ANY_METHOD = "*"
# never kept: a recorded request may be printed, and no fake needs a key to answer
SECRET_HEADERS = {"x-api-key", "authorization", "api-key", "proxy-authorization"}
REDACTED = "<redacted>"


@dataclass
class Request:
    """One request as it arrived, and what became of it (`status`, once answered)."""

    method: str
    target: str                       # as sent: the path and its query
    path: str                         # the path alone, without a trailing slash
    headers: dict[str, str]           # names in lower case, secrets redacted
    raw: bytes
    body: Any                         # the JSON body; None when there is none or it is not JSON
    time: float
    seq: int = 0                      # 1 for the first request the server recorded (since a clear)
    params: dict[str, str | None] = field(default_factory=dict)   # the named groups of a pattern route
    notes: dict[str, Any] = field(default_factory=dict)           # what the fake noted (its fault, its count)
    status: int | None = None
    problem: str | None = None        # why the fake refused it, as the real API would


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Reply]


@dataclass
class Route:
    method: str                       # "GET", "POST", ... or ANY_METHOD
    path: str | re.Pattern[str]       # an exact path, or a pattern the whole path must match
    handler: Handler

    def match(self, request: Request) -> dict[str, str | None] | None:
        """The pattern's named groups (empty for an exact path) when this route takes the request, else None."""
        if self.method not in (ANY_METHOD, request.method):
            return None
        if isinstance(self.path, str):
            return {} if self.path == request.path else None
        found = self.path.fullmatch(request.path)
        return found.groupdict() if found else None


def json_reply(status: int, data: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode("utf-8"), {"content-type": "application/json", **(headers or {})})


def sse_reply(events: Iterable[tuple[str, Any]], headers: dict[str, str] | None = None) -> Reply:
    """Server-sent events, `event: <name>` and `data: <JSON>` each, sent whole (the agents read them as a stream)."""
    data = b"".join(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode("utf-8") for name, event in events)
    return Reply(200, data, {"content-type": "text/event-stream", "cache-control": "no-cache", **(headers or {})})


def not_found(request: Request) -> Reply:
    return json_reply(404, {"error": {"message": f"no route for {request.method} {request.path}"}})


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps the clients' connections alive, as a real API does
    protocol_version = "HTTP/1.1"
    server_version = "HermesPipelineFake/1.0"
    # headers and body go out as two writes: without TCP_NODELAY the body waits for the client's
    # delayed ACK (~40 ms a reply), which no real API adds
    disable_nagle_algorithm = True

    def _dispatch(self) -> None:
        self.server.owner._handle(self)  # type: ignore[attr-defined]

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server naming
        if self.server.owner.log:  # type: ignore[attr-defined]
            super().log_message(format, *args)


class _ThreadingServer(ThreadingHTTPServer):
    daemon_threads = True       # a hanging handler must never block shutdown,
    block_on_close = False      # nor one waiting on a client's kept-alive connection
    request_queue_size = 128    # many clients connect at once; the default backlog of 5 resets them
    owner: "LoopbackServer"


class LoopbackServer:
    """Serves `routes` in a thread of this process; restartable (a new port each start when port is 0).

    `on_arrival(request)` is called as each request is recorded, under the recording lock: what a fake
    assigns there (the next scripted fault, a request count) follows the arrival order exactly.
    `stopping` is set while the server stops: a handler that sleeps waits on it, so stop() never waits
    for a sleep to end. `log` prints an access-log line per request to stderr.
    """

    def __init__(self, routes: Iterable[Route] = (), *, host: str = "127.0.0.1", port: int = 0,
                 fallback: Handler = not_found, on_arrival: Callable[[Request], None] | None = None,
                 log: bool = False) -> None:
        self.routes = list(routes)
        self.host, self.port = host, port
        self.fallback, self.on_arrival, self.log = fallback, on_arrival, log
        self.stopping = threading.Event()
        self._changed = threading.Condition()      # a request was recorded
        self._requests: list[Request] = []
        self._server: _ThreadingServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------

    def start(self) -> "LoopbackServer":
        if self._server is not None:
            return self
        self.stopping.clear()
        self._server = _ThreadingServer((self.host, self.port), _Handler)
        self._server.owner = self
        # a short poll interval keeps stop() fast: shutdown() waits for one poll
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True,
                                        name=f"fake-http-{self._server.server_address[1]}")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> "LoopbackServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake HTTP server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # ---- the record ------------------------------------------------------------

    @property
    def requests(self) -> list[Request]:
        """What arrived since the start (or the last clear), in order."""
        with self._changed:
            return list(self._requests)

    def clear(self) -> None:
        with self._changed:
            self._requests.clear()

    def wait_for_requests(self, count: int, timeout: float = 60.0) -> int:
        """Wait until `count` requests were recorded (a client that timed out on a request the server had not
        read yet is ahead of the record); returns how many were."""
        with self._changed:
            self._changed.wait_for(lambda: len(self._requests) >= count, timeout)
            return len(self._requests)

    # ---- one request -----------------------------------------------------------

    def _handle(self, http: BaseHTTPRequestHandler) -> None:
        raw = http.rfile.read(int(http.headers.get("Content-Length") or 0))
        request = self._record(http, raw)
        reply = self._handler_of(request)(request)
        request.status = reply.status
        self._send(http, reply)

    def _handler_of(self, request: Request) -> Handler:
        """The first route that takes the request (its pattern's groups put in request.params), else fallback."""
        for route in self.routes:
            params = route.match(request)
            if params is not None:
                request.params = params
                return route.handler
        return self.fallback

    def _record(self, http: BaseHTTPRequestHandler, raw: bytes) -> Request:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): REDACTED if name.lower() in SECRET_HEADERS else value
                   for name, value in http.headers.items()}
        request = Request(method=http.command, target=http.path, path=urlsplit(http.path).path.rstrip("/") or "/",
                          headers=headers, raw=raw, body=body, time=time.time())
        with self._changed:
            self._requests.append(request)
            request.seq = len(self._requests)
            if self.on_arrival is not None:
                self.on_arrival(request)
            self._changed.notify_all()
        return request

    @staticmethod
    def _send(http: BaseHTTPRequestHandler, reply: Reply) -> None:
        try:
            http.send_response(reply.status)
            http.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                http.send_header(name, value)
            http.end_headers()
            if http.command != "HEAD":
                http.wfile.write(reply.body)
        except (BrokenPipeError, ConnectionResetError):
            # the client gave up (its timeout fired during a hang, say): nothing to answer
            http.close_connection = True


class ServedFake:
    """A fake whose routes are served by a LoopbackServer of its own (`self.server`): with-block, start, stop."""

    server: LoopbackServer

    def start(self):
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url
