"""The fakes' one HTTP server (hermes_pipeline/testing/http_server.py), through real sockets on 127.0.0.1."""
from __future__ import annotations

import http.client
import json
import re
from urllib.parse import urlsplit

import pytest

from hermes_pipeline.testing.http_server import (
    ANY_METHOD,
    REDACTED,
    LoopbackServer,
    Reply,
    Route,
    json_reply,
    sse_reply,
)


def call(server: LoopbackServer, method: str, target: str, body: bytes | None = None,
         headers: dict | None = None) -> tuple[int, dict, bytes]:
    """One request on a connection of its own: (status, headers in lower case, body)."""
    address = urlsplit(server.base_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=10)
    try:
        connection.request(method, target, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def events_of(data: bytes) -> list[tuple[str, dict]]:
    """(name, data) of each server-sent event, as an SDK's stream reader splits them."""
    events = []
    for chunk in data.decode().split("\n\n"):
        if chunk:
            fields = dict(line.split(": ", 1) for line in chunk.splitlines())
            events.append((fields["event"], json.loads(fields["data"])))
    return events


@pytest.fixture
def server():
    routes = [
        Route("POST", "/v1/echo", lambda request: json_reply(201, {"got": request.body}, {"x-seen": "yes"})),
        Route("GET", re.compile(r"/v1/items/(?P<id>\w+)"), lambda request: json_reply(200, request.params)),
        Route(ANY_METHOD, "/v1/any", lambda request: json_reply(200, {"method": request.method})),
        Route("POST", "/v1/stream", lambda request: sse_reply([("start", {"n": 1}), ("stop", {"n": 2})])),
        Route("HEAD", "/v1/echo", lambda request: Reply(200, b"never sent")),
    ]
    with LoopbackServer(routes) as running:
        yield running


def test_routes_answer_by_method_and_path_and_the_rest_is_a_json_404(server):
    status, headers, body = call(server, "POST", "/v1/echo", b'{"a": [1, 2]}')
    assert (status, json.loads(body), headers["x-seen"]) == (201, {"got": {"a": [1, 2]}}, "yes")
    assert headers["content-type"] == "application/json" and int(headers["content-length"]) == len(body)
    assert json.loads(call(server, "GET", "/v1/items/abc42")[2]) == {"id": "abc42"}       # a pattern's groups
    assert [json.loads(call(server, m, "/v1/any")[2])["method"] for m in ("GET", "PUT", "DELETE")] == \
        ["GET", "PUT", "DELETE"]
    status, _, body = call(server, "GET", "/v1/echo")                                       # the wrong method
    assert status == 404 and json.loads(body) == {"error": {"message": "no route for GET /v1/echo"}}
    assert call(server, "GET", "/v1/items/a/b")[0] == 404                                    # the whole path must match


def test_server_sent_events_are_sent_whole_as_event_and_data_lines(server):
    status, headers, body = call(server, "POST", "/v1/stream", b"{}")
    assert status == 200 and headers["content-type"] == "text/event-stream"
    assert events_of(body) == [("start", {"n": 1}), ("stop", {"n": 2})]


def test_a_head_request_gets_the_headers_and_no_body(server):
    status, headers, body = call(server, "HEAD", "/v1/echo")
    assert (status, body, headers["content-length"]) == (200, b"", str(len(b"never sent")))


def test_every_request_is_recorded_as_it_arrived_without_its_secrets(server):
    call(server, "POST", "/v1/echo/?stream=1", b'{"k": 1}', {"X-Api-Key": "sk-secret", "Authorization": "Bearer t",
                                                            "X-Trace": "t1"})
    call(server, "POST", "/v1/nowhere", b"not json")
    first, second = server.requests
    assert (first.method, first.target, first.path, first.body) == ("POST", "/v1/echo/?stream=1", "/v1/echo", {"k": 1})
    assert first.headers["x-api-key"] == first.headers["authorization"] == REDACTED
    assert first.headers["x-trace"] == "t1" and "sk-secret" not in json.dumps(first.headers)
    assert (first.seq, first.status, second.seq, second.status) == (1, 201, 2, 404)
    assert (second.raw, second.body) == (b"not json", None)
    assert server.wait_for_requests(2, timeout=0) == 2
    server.clear()
    assert server.requests == [] and call(server, "POST", "/v1/echo", b"{}")[0] == 201
    assert server.requests[0].seq == 1


def test_on_arrival_notes_each_request_in_arrival_order_before_its_route_answers():
    seen = []

    def arrived(request):
        request.notes["count"] = len(seen) + 1
        seen.append(request.path)

    route = Route("POST", "/n", lambda request: json_reply(200, {"count": request.notes["count"], "at": seen[:]}))
    with LoopbackServer([route], on_arrival=arrived) as server:
        answers = [json.loads(call(server, "POST", "/n", b"{}")[2]) for _ in range(3)]
    assert answers == [{"count": n, "at": ["/n"] * n} for n in (1, 2, 3)]


def test_a_fallback_answers_what_no_route_takes():
    with LoopbackServer([], fallback=lambda request: json_reply(418, {"path": request.path})) as server:
        assert call(server, "PATCH", "/x/y")[0] == 418
        assert server.requests[0].status == 418


def test_start_and_stop_as_a_context_manager_and_again():
    server = LoopbackServer([Route("GET", "/", lambda request: json_reply(200, {}))])
    with pytest.raises(RuntimeError, match="not started"):
        server.base_url
    with server:
        first = server.base_url
        assert call(server, "GET", "/")[0] == 200
    assert server.stopping.is_set()
    address = urlsplit(first)
    with pytest.raises(ConnectionRefusedError):
        http.client.HTTPConnection(address.hostname, address.port, timeout=5).connect()
    with server:                                                 # restarted: a free port again, the record kept
        assert not server.stopping.is_set() and call(server, "GET", "/")[0] == 200
        assert server.base_url.startswith("http://127.0.0.1:") and len(server.requests) == 2
