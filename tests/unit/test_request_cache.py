"""The persistent request cache: stable keys, persistence, off switch, thread safety."""
from __future__ import annotations

import threading

from hermes_pipeline.summarizers.llm.request_cache import RequestCache, request_key

REQUEST = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}


def test_key_depends_on_provider_model_and_exact_request():
    key = request_key("anthropic", "m", REQUEST)
    assert key == request_key("anthropic", "m", dict(reversed(list(REQUEST.items()))))
    assert len(key) == 64
    assert key != request_key("openai", "m", REQUEST)
    assert key != request_key("anthropic", "m2", REQUEST)
    assert key != request_key("anthropic", "m", {**REQUEST, "max_tokens": 101})


def test_roundtrip_and_persistence_across_instances(tmp_path):
    path = tmp_path / "deep" / "dir" / "requests.sqlite"
    cache = RequestCache(path)
    key = request_key("anthropic", "m", REQUEST)
    assert cache.get(key) is None
    cache.put(key, {"text": "## Goal\n- résumé 日本", "note": None})
    assert cache.get(key) == {"text": "## Goal\n- résumé 日本", "note": None}
    cache.close()
    reopened = RequestCache(path)
    assert reopened.get(key)["text"].endswith("日本")
    assert len(reopened) == 1 and reopened.hits == 1
    reopened.close()


def test_disabled_cache_stores_nothing(tmp_path):
    path = tmp_path / "requests.sqlite"
    for cache in (RequestCache(path, enabled=False), RequestCache(None)):
        cache.put("k", {"text": "x"})
        assert cache.get("k") is None and len(cache) == 0
        cache.close()
    assert not path.exists()


def test_lone_surrogates_do_not_break_keys_or_values(tmp_path):
    cache = RequestCache(tmp_path / "c.sqlite")
    key = request_key("openai", "m", {"messages": [{"content": "bad \ud800 text"}]})
    cache.put(key, {"text": "kept \udc80"})
    assert cache.get(key) == {"text": "kept \udc80"}
    cache.close()


def test_concurrent_threads_share_one_cache(tmp_path):
    cache = RequestCache(tmp_path / "c.sqlite")
    errors = []

    def worker(n):
        try:
            for i in range(50):
                key = request_key("p", "m", {"n": n, "i": i})
                cache.put(key, {"text": f"{n}-{i}"})
                assert cache.get(key) == {"text": f"{n}-{i}"}
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(cache) == 16 * 50
    cache.close()


def test_a_home_path_is_expanded(tmp_path, monkeypatch):
    """summarizer.cache.path=~/... reaches the cache unexpanded (the command line quotes a leading ~)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    cache = RequestCache("~/cache/requests.sqlite")
    cache.put(request_key("anthropic", "m", REQUEST), {"text": "x"})
    cache.close()
    assert (tmp_path / "home" / "cache" / "requests.sqlite").is_file() and not (tmp_path / "~").exists()
