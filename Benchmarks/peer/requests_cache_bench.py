#!/usr/bin/env python3
"""The peer: requests-cache 1.3.x (SQLite backend, WAL on) reading and storing the same 10 KiB
response Tollgate's benchmarks use.

    python3 requests_cache_bench.py ITERATIONS DIR

Creates the virtual environment Benchmarks/.venv and installs requests-cache into it when it is
missing, then re-runs itself there. Each operation is timed on its own; the medians are printed as
`RESULT <name> <nanoseconds>`, the format compare.sh reads.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(os.path.dirname(HERE), ".venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")
REQUIREMENT = "requests-cache>=1.3,<1.4"
BODY_SIZE = 10 * 1024
ENTRIES = 100  # as many as the Tollgate hit benchmark cycles through


def ensure_venv():
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(VENV_PYTHON):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    check = subprocess.run([VENV_PYTHON, "-c", "import requests_cache"], capture_output=True)
    if check.returncode != 0:
        subprocess.check_call([VENV_PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", REQUIREMENT])
    os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


def make_response(url, body):
    import io

    import requests
    from requests.structures import CaseInsensitiveDict
    from urllib3 import HTTPResponse

    request = requests.Request("GET", url).prepare()
    response = requests.Response()
    response.status_code = 200
    response.reason = "OK"
    response.url = url
    response.request = request
    response.encoding = "utf-8"
    response.headers = CaseInsensitiveDict({
        "Content-Type": "application/json; charset=UTF-8",
        "ETag": '"v1-etag"',
        "Cache-Control": "private, max-age=3600",
        "Content-Length": str(len(body)),
    })
    response._content = body
    # What requests' adapter leaves on a real response; requests-cache copies it when storing.
    response.raw = HTTPResponse(body=io.BytesIO(body), headers=dict(response.headers), status=200,
                                reason="OK", preload_content=False, request_url=url)
    response.elapsed = __import__("datetime").timedelta(milliseconds=5)
    return response


def median(samples):
    samples = sorted(samples)
    return samples[len(samples) // 2]


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    directory = sys.argv[2] if len(sys.argv) > 2 else "."
    ensure_venv()

    import requests_cache

    from importlib.metadata import version as package_version

    version = package_version("requests-cache")
    path = os.path.join(directory, "requests-cache.sqlite")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    session = requests_cache.CachedSession(path, backend="sqlite", wal=True)
    cache = session.cache
    body = bytes((i * 31 + 7) % 256 for i in range(BODY_SIZE))

    keys = []
    for index in range(ENTRIES):
        url = f"https://www.googleapis.com/youtube/v3/videos?id=video{index}&part=snippet"
        response = make_response(url, body)
        key = cache.create_key(response.request)
        cache.save_response(response, key)
        keys.append(key)

    # Read: the cached response, deserialised, as a session's hit gets it.
    warmup = max(iterations // 10, 1)
    samples = []
    for i in range(-warmup, iterations):
        key = keys[i % ENTRIES]
        start = time.perf_counter_ns()
        cached = cache.get_response(key)
        elapsed = time.perf_counter_ns() - start
        assert cached is not None and len(cached.content) == BODY_SIZE
        if i >= 0:
            samples.append(elapsed)
    print(f"RESULT peer.read {median(samples)}")

    # Store: a new 200 with the same 10 KiB body under a new key each time.
    samples = []
    for i in range(-warmup, iterations):
        url = f"https://www.googleapis.com/youtube/v3/videos?id=stored{i + warmup}&part=snippet"
        response = make_response(url, body)
        key = cache.create_key(response.request)
        start = time.perf_counter_ns()
        cache.save_response(response, key)
        elapsed = time.perf_counter_ns() - start
        if i >= 0:
            samples.append(elapsed)
    print(f"RESULT peer.store {median(samples)}")
    print(f"INFO peer.version requests-cache {version}")


if __name__ == "__main__":
    main()
