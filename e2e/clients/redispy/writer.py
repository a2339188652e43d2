"""The redis-py writer of the e2e client matrix.

It writes sequenced keys through a RedisCluster client with its default options
until SIGTERM or EOF on stdin, then reads every acknowledged key back and prints
one JSON report on stdout.

Contract (shared with e2e/clients/ioredis/writer.mjs):
  env SEEDS (host:port,...), VK_USERNAME, VK_PASSWORD, PREFIX (default "cl"),
  INTERVAL_MS (default 5), TIMEOUT_MS (default 2000).
  stdout: {"event":"ready"} after the first acknowledged write, then one
  {"event":"report",...} line. Diagnostics go to stderr.

Run it with Debian's /usr/bin/python3 and its python3-redis package.
"""

import collections
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from datetime import datetime, timezone

import redis
from redis.cluster import ClusterNode, RedisCluster

STARTED = time.monotonic()


def since_start():
    return int((time.monotonic() - STARTED) * 1000)


def log(msg):
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    sys.stderr.write(f"{now} +{since_start()}ms {msg}\n")
    sys.stderr.flush()


class OneLine(logging.Formatter):
    """Formats a record of the library on one line, its exception included."""

    def format(self, record):
        msg = f"redis-py {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            e = record.exc_info[1]
            if record.getMessage() != type(e).__name__:
                msg += f": {type(e).__name__}"
            msg += f": {e}"
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        return f"{now} +{since_start()}ms {msg}"


# redis-py logs the errors it handles itself (MOVED, connection errors) with
# tracebacks; they go to stderr, one line each.
_handler = logging.StreamHandler(sys.stderr)
_handler.setFormatter(OneLine())
logging.getLogger("redis").addHandler(_handler)
logging.getLogger("redis").setLevel(logging.WARNING)
logging.getLogger("redis").propagate = False


# Errors are counted by message, truncated and with numbers replaced, so that
# similar errors (other addresses, ports, slots) group together.
errors = {}


def count(prefix, err):
    msg = str(err) or type(err).__name__
    key = prefix + re.sub(r"\d+", "N", msg[:120])
    errors[key] = errors.get(key, 0) + 1


def on_unraisable(u):
    # Python ignores an exception raised in a finalizer (redis-py 4.3.4's
    # ClusterNode.__del__ raises one after a failed reinitialization) and prints
    # a traceback: count it instead, and log it on one line.
    where = getattr(u.object, "__qualname__", None) or type(u.object).__name__
    msg = f"{u.exc_type.__name__}: {u.exc_value}"
    log(f"ignored exception in {where}: {msg}")
    count("event: unraisable: ", msg)


sys.unraisablehook = on_unraisable


# Stop on SIGTERM or EOF on stdin. The handler only sets a flag: a call in
# progress finishes (or times out) first.
stop = threading.Event()


def on_sigterm(signum, frame):
    if not stop.is_set():
        log("stopping: SIGTERM")
    stop.set()


# The seeds of the read back: a line SEEDS=host:port,... on stdin replaces those
# of the environment (after a roll every member has a new address).
read_seeds = []


def parse_seeds(value):
    seeds = []
    for s in filter(None, value.split(",")):
        host, _, port = s.rpartition(":")
        seeds.append(ClusterNode(host, int(port)))
    return seeds


def watch_stdin():
    # os.read, not sys.stdin: a daemon thread blocked in a buffered read aborts
    # the interpreter at exit.
    buf = b""
    try:
        while True:
            chunk = os.read(0, 4096)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line.startswith(b"SEEDS="):
                    read_seeds[:] = parse_seeds(line[len(b"SEEDS="):].decode())
    except OSError:
        pass
    if not stop.is_set():
        log("stopping: stdin closed")
    stop.set()


def new_client(seeds, timeout):
    """A RedisCluster with the defaults, except for credentials and the socket
    timeouts. The constructor connects, and raises when no seed answers."""
    return RedisCluster(
        startup_nodes=seeds,
        username=os.environ.get("VK_USERNAME") or None,
        password=os.environ.get("VK_PASSWORD") or None,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
    )


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    threading.Thread(target=watch_stdin, daemon=True).start()

    seeds = parse_seeds(os.environ.get("SEEDS", ""))
    if not seeds:
        log("SEEDS is empty")
        return 2
    prefix = os.environ.get("PREFIX") or "cl"
    interval = int(os.environ.get("INTERVAL_MS") or 5) / 1000
    timeout = int(os.environ.get("TIMEOUT_MS") or 2000) / 1000

    # Unlike ioredis, the constructor gives up when no seed answers: it is tried
    # again every second until it works.
    writer = None
    while writer is None and not stop.is_set():
        try:
            writer = new_client(seeds, timeout)
        except Exception as e:
            log(f"writer: connect: {type(e).__name__}: {e}")
            count("connect: ", e)
            stop.wait(1)

    writes = failed = 0
    acked = []
    last_ack = longest_gap = longest_gap_at = 0

    # One writer: SET <prefix>:<i> <i>, one at a time.
    i = 0
    while writer is not None and not stop.is_set():
        writes += 1
        try:
            reply = writer.set(f"{prefix}:{i}", str(i))
        except Exception as e:
            log(f"SET {prefix}:{i}: {type(e).__name__}: {e}")
            reply = e
        if reply is True:
            now = since_start()
            if not acked:
                print('{"event":"ready"}', flush=True)
            elif now - last_ack > longest_gap:
                longest_gap, longest_gap_at = now - last_ack, last_ack
            last_ack = now
            acked.append(i)
        else:
            failed += 1
            count("", reply if isinstance(reply, Exception) else f"unexpected reply: {reply!r}")
        i += 1
        stop.wait(interval)
    log(f"writes stopped: {writes} writes, {len(acked)} acked, {failed} failed")
    close(writer)

    # Read back through a new client, so that a writer client left in a bad
    # state does not hide what the cluster kept. A key whose GET fails goes to
    # the back of the queue. Retries end 30 s after the first failure: the keys
    # not read by then count as unread.
    budget = 30
    first_error = None
    reader = None
    queue = collections.deque(acked)
    lost = []
    while queue:
        if first_error is not None and time.monotonic() - first_error > budget:
            break
        try:
            if reader is None:
                reader = new_client(read_seeds or seeds, timeout)
            n = queue[0]
            value = reader.get(f"{prefix}:{n}")
        except Exception as e:
            log(f"reader: {type(e).__name__}: {e}")
            if first_error is None:
                first_error = time.monotonic()
            queue.rotate(-1)
            time.sleep(0.1)
            continue
        queue.popleft()
        if value != str(n).encode():
            lost.append(n)
    close(reader)

    report = {
        "event": "report",
        "client": "redis-py " + redis.__version__,
        "writes": writes,
        "acked": len(acked),
        "failed": failed,
        "lost": len(lost),
        "lostKeys": [f"{prefix}:{n}" for n in sorted(lost)[:10]],
        "unread": len(queue),
        "longestGapMs": longest_gap,
        "longestGapAtMs": longest_gap_at,
        "errors": errors,
    }
    print(json.dumps(report, separators=(",", ":")), flush=True)
    return 0


def close(client):
    if client is not None:
        try:
            client.close()
        except Exception:
            pass


if __name__ == "__main__":
    sys.exit(main())
