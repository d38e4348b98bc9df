"""The shared frontier in Redis, with a reliable pop: requests in flight are never lost.

scrapy-redis's ``PriorityQueue`` removes a request from ``<spider>:requests``
when a worker pops it; if that worker dies before the page is processed, the
request is gone, and the dupefilter keeps every other worker from finding it
again. Here a pop *moves* the request into the worker's in-flight hash
``<spider>:inflight:<worker>`` (one Lua script, atomic), and the scheduler
acknowledges it (``HDEL``) once the engine is done with it: downloaded, its
callback run, its requests enqueued and its items through every pipeline.

Workers are registered in the sorted set ``<spider>:workers`` with the time of
their last heartbeat (Redis's own clock, so nodes need not agree on the time).
:meth:`Frontier.reap` returns the in-flight requests of every worker silent for
longer than the worker timeout to the queue; :meth:`Frontier.release` is a
clean exit: the worker's unfinished requests go back, it leaves the registry,
and the last worker out clears the frontier (and the shared profile,
:mod:`skillgraph.distributed.detection`) so the next crawl starts afresh.
After a Redis outage, :meth:`Frontier.requeue_orphans` returns what a pop
moved into the worker's hash while its reply was lost (the worker never got
the request, so it would never acknowledge it, and every worker would wait
for it).

The scripts build key names from a prefix, so the frontier needs one Redis
server (not Redis Cluster), like scrapy-redis itself.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from scrapy_redis.queue import Base

from skillgraph.compat.scrapy_redis import decode_request, encode_request
from skillgraph.distributed.keys import FrontierKeys

if TYPE_CHECKING:
    from redis import Redis
    from scrapy import Request, Spider

#: Pop the best request (lowest score: highest priority) into the worker's in-flight hash.
POP = """
local r = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #r == 0 then return false end
redis.call('ZREM', KEYS[1], r[1])
local token = r[2] .. ' ' .. ARGV[1]
redis.call('HSET', KEYS[2], token, r[1])
return {r[1], token}
"""

#: Shared by the two scripts below: move one in-flight hash back into the queue.
_REQUEUE = """
local function requeue(hash, queue)
  local entries = redis.call('HGETALL', hash)
  for i = 1, #entries, 2 do
    redis.call('ZADD', queue, string.match(entries[i], '^(%S+)'), entries[i + 1])
  end
  redis.call('DEL', hash)
  return #entries / 2
end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
"""

#: KEYS: workers, requests. ARGV: timeout seconds, in-flight key prefix. Returns {requeued, dead workers}.
REAP = _REQUEUE + """
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
local moved = 0
for _, w in ipairs(dead) do
  moved = moved + requeue(ARGV[2] .. w, KEYS[2])
  redis.call('ZREM', KEYS[1], w)
end
return {moved, #dead}
"""

#: KEYS: workers, requests, dupefilter, shared profile. ARGV: worker, timeout, in-flight prefix, "1" to clear
#: when last. Returns {requeued, cleared}.
RELEASE = _REQUEUE + """
local moved = requeue(ARGV[3] .. ARGV[1], KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[4] ~= '1' or redis.call('ZCOUNT', KEYS[1], now - tonumber(ARGV[2]), '+inf') > 0 then
  return {moved, 0}
end
for _, w in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do redis.call('DEL', ARGV[3] .. w) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return {moved, 1}
"""

#: KEYS: workers. ARGV: worker. Records a heartbeat; returns every registered worker.
HEARTBEAT = """
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(t[1]) + tonumber(t[2]) / 1000000, ARGV[1])
return redis.call('ZRANGE', KEYS[1], 0, -1)
"""

#: KEYS: workers, requests. ARGV: in-flight prefix. Returns {queued, in flight across all workers}.
PROGRESS = """
local inflight = 0
for _, w in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  inflight = inflight + redis.call('HLEN', ARGV[1] .. w)
end
return {redis.call('ZCARD', KEYS[2]), inflight}
"""

#: KEYS: this worker's in-flight hash, requests. ARGV: the tokens the worker holds. Returns the number requeued.
ORPHANS = """
local held = {}
for _, token in ipairs(ARGV) do held[token] = true end
local entries = redis.call('HGETALL', KEYS[1])
local moved = 0
for i = 1, #entries, 2 do
  if not held[entries[i]] then
    redis.call('ZADD', KEYS[2], string.match(entries[i], '^(%S+)'), entries[i + 1])
    redis.call('HDEL', KEYS[1], entries[i])
    moved = moved + 1
  end
end
return moved
"""


class Frontier(Base):
    """scrapy-redis's priority queue (same key, same scores) whose pop is acknowledged."""

    def __init__(self, server: Redis, spider: Spider, keys: FrontierKeys, worker: str, serializer: Any) -> None:
        super().__init__(server, spider, keys.requests, serializer=serializer)
        self.keys = keys
        self.worker = worker
        self.inflight_key = keys.inflight_prefix + worker
        self.tokens: dict[Request, str] = {}  # popped, not yet acknowledged
        self._pop = server.register_script(POP)
        self._reap = server.register_script(REAP)
        self._release = server.register_script(RELEASE)
        self._heartbeat = server.register_script(HEARTBEAT)
        self._progress = server.register_script(PROGRESS)
        self._orphans = server.register_script(ORPHANS)

    def __len__(self) -> int:
        return int(self.server.zcard(self.key))

    def push(self, request: Request) -> bool:
        """``ZADD`` like scrapy-redis (score ``-priority``); raises TypeError/ValueError if not serialisable."""
        self.server.execute_command("ZADD", self.key, -request.priority, encode_request(self, request))
        return True

    def pop(self, timeout: int = 0) -> Request | None:
        result = self._pop(keys=[self.key, self.inflight_key], args=[uuid.uuid4().hex])
        if not result:
            return None
        data, token = result
        request = decode_request(self, data)
        self.tokens[request] = token.decode() if isinstance(token, bytes) else token
        return request

    def ack(self, requests: list[Request]) -> int:
        """``HDEL`` their tokens; forgotten here only once Redis has them (a failed call is acknowledged later)."""
        tokens = [self.tokens[request] for request in requests]
        if tokens:
            self.server.hdel(self.inflight_key, *tokens)
        for request in requests:
            del self.tokens[request]
        return len(tokens)

    def requeue_orphans(self) -> int:
        """Requeue what this worker's in-flight hash holds but the worker does not (a pop whose reply was lost)."""
        return int(self._orphans(keys=[self.inflight_key, self.key], args=list(self.tokens.values())))

    def heartbeat(self) -> list[str]:
        """Record that this worker is alive; the names of every registered worker."""
        names = self._heartbeat(keys=[self.keys.workers], args=[self.worker])
        return [n.decode() if isinstance(n, bytes) else str(n) for n in names]

    def reap(self, timeout: float) -> tuple[int, int]:
        """Requeue the in-flight requests of workers silent for ``timeout`` s: (requests, workers)."""
        moved, dead = self._reap(keys=[self.keys.workers, self.key], args=[timeout, self.keys.inflight_prefix])
        return int(moved), int(dead)

    def progress(self) -> tuple[int, int]:
        """(requests queued, requests in flight in any registered worker)."""
        queued, inflight = self._progress(keys=[self.keys.workers, self.key], args=[self.keys.inflight_prefix])
        return int(queued), int(inflight)

    def release(self, timeout: float, clear_if_last: bool) -> tuple[int, bool]:
        """Leave: requeue what is still in flight here; the last live worker clears the frontier."""
        self.tokens.clear()
        moved, cleared = self._release(
            keys=[self.keys.workers, self.key, self.keys.dupefilter, self.keys.profile],
            args=[self.worker, timeout, self.keys.inflight_prefix, "1" if clear_if_last else "0"])
        return int(moved), bool(cleared)

    def clear(self) -> None:
        """Empty the queue (``SCHEDULER_FLUSH_ON_START``); the shared profile goes with it: a fresh crawl detects."""
        self.server.delete(self.key, self.keys.profile)
