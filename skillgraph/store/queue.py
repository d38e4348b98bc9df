"""The Redis side of a store worker: claim, complete, retry, dead-letter, reap stale claims.

The reliable-queue pattern on DESIGN.md's keys. A worker claims a document by
moving it atomically from ``skillgraph:queue`` to ``skillgraph:processing``
(``BLMOVE ... LEFT RIGHT``), stores it, then completes it with ``LREM
skillgraph:processing 1 <payload>``. A worker that dies mid-document leaves
its payload in ``skillgraph:processing``, so two more keys (documented in
docs/store.md) make claims recoverable and poison documents finite:

* ``skillgraph:processing:claimed_at`` (hash): payload id -> Redis server time
  of the claim (server time, so the clocks of worker hosts never matter);
* ``skillgraph:processing:attempts`` (hash): payload id -> claims so far;
* ``skillgraph:dead`` (list): payloads given up on (bad JSON, or failed
  ``SKILLGRAPH_WORKER_MAX_ATTEMPTS`` times), to inspect and push back by hand.

A payload id is the SHA-1 hex of the payload bytes: the one digest Lua in
Redis can compute (``redis.sha1hex``), so the reaper script finds the claim
time of each payload it reads.

Every multi-key step is one Lua script, so it is atomic with respect to other
workers: the reaper (run by every worker) can never return a payload twice or
lose one, and a completion racing a reap removes exactly one copy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from skillgraph.build.state import PROCESSING_KEY, QUEUE_KEY

CLAIMED_AT_KEY = "skillgraph:processing:claimed_at"
ATTEMPTS_KEY = "skillgraph:processing:attempts"
DEAD_KEY = "skillgraph:dead"

#: Record the claim time (server clock) and count the attempt; returns the attempts so far.
CLAIMED_SCRIPT = """
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], ARGV[1], t[1] .. '.' .. string.format('%06d', tonumber(t[2])))
return redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
"""

#: Remove one copy from processing; forget the claim once no copy is left. Returns copies removed.
COMPLETE_SCRIPT = """
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
if not redis.call('LPOS', KEYS[1], ARGV[1]) then
  redis.call('HDEL', KEYS[2], ARGV[2])
  redis.call('HDEL', KEYS[3], ARGV[2])
end
return removed
"""

#: Move one copy from processing to the tail of a list (the queue to retry, or the dead letters).
MOVE_SCRIPT = """
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
if removed == 1 then
  redis.call('RPUSH', KEYS[4], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[2])
  if ARGV[3] == '1' then redis.call('HDEL', KEYS[3], ARGV[2]) end
end
return removed
"""

#: Give a claim back untried: to the head of the queue, its claim forgotten and the attempt not counted.
RELEASE_SCRIPT = """
local removed = redis.call('LREM', KEYS[1], 1, ARGV[1])
if removed == 1 then
  redis.call('LPUSH', KEYS[4], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[2])
  if redis.call('HINCRBY', KEYS[3], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[3], ARGV[2]) end
end
return removed
"""

#: Return claims older than ARGV[1] seconds to the head of the queue. A payload with no recorded claim
#: time (its worker died between BLMOVE and recording it) gets "now": it is reaped one timeout later.
REAP_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local timeout = tonumber(ARGV[1])
local reaped = 0
for _, payload in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
  local id = redis.sha1hex(payload)
  local at = redis.call('HGET', KEYS[2], id)
  if not at then
    redis.call('HSET', KEYS[2], id, string.format('%.6f', now))
  elseif now - tonumber(at) >= timeout then
    redis.call('LREM', KEYS[1], 1, payload)
    redis.call('LPUSH', KEYS[3], payload)
    redis.call('HDEL', KEYS[2], id)
    reaped = reaped + 1
  end
end
return reaped
"""


def payload_id(payload: bytes) -> str:
    return hashlib.sha1(payload).hexdigest()  # an id shared with Lua's redis.sha1hex


@dataclass
class Claim:
    payload: bytes
    attempts: int

    @property
    def id(self) -> str:
        return payload_id(self.payload)


class ClaimQueue:
    """One worker's view of the queue, over a blocking redis-py client."""

    def __init__(self, redis: Any) -> None:
        self.redis = redis
        self._claimed = redis.register_script(CLAIMED_SCRIPT)
        self._complete = redis.register_script(COMPLETE_SCRIPT)
        self._move = redis.register_script(MOVE_SCRIPT)
        self._reap = redis.register_script(REAP_SCRIPT)
        self._release = redis.register_script(RELEASE_SCRIPT)

    def claim(self, block_seconds: float | None) -> Claim | None:
        """The next document, moved to processing; None when the queue stays empty (``None``: don't block)."""
        if block_seconds is None:
            payload = self.redis.lmove(QUEUE_KEY, PROCESSING_KEY, "LEFT", "RIGHT")
        else:
            payload = self.redis.blmove(QUEUE_KEY, PROCESSING_KEY, block_seconds, "LEFT", "RIGHT")
        if payload is None:
            return None
        attempts = int(self._claimed(keys=[CLAIMED_AT_KEY, ATTEMPTS_KEY], args=[payload_id(payload)]))
        return Claim(payload, attempts)

    def complete(self, claim: Claim) -> bool:
        """Done: the payload leaves processing. False when it was not there any more (reaped meanwhile)."""
        keys = [PROCESSING_KEY, CLAIMED_AT_KEY, ATTEMPTS_KEY]
        return bool(self._complete(keys=keys, args=[claim.payload, claim.id]))

    def retry(self, claim: Claim) -> bool:
        """Back to the tail of the queue, its attempt count kept."""
        keys = [PROCESSING_KEY, CLAIMED_AT_KEY, ATTEMPTS_KEY, QUEUE_KEY]
        return bool(self._move(keys=keys, args=[claim.payload, claim.id, "0"]))

    def release(self, claim: Claim) -> bool:
        """Back to the head of the queue as if never claimed (the worker, not the document, failed)."""
        keys = [PROCESSING_KEY, CLAIMED_AT_KEY, ATTEMPTS_KEY, QUEUE_KEY]
        return bool(self._release(keys=keys, args=[claim.payload, claim.id]))

    def dead_letter(self, claim: Claim) -> bool:
        keys = [PROCESSING_KEY, CLAIMED_AT_KEY, ATTEMPTS_KEY, DEAD_KEY]
        return bool(self._move(keys=keys, args=[claim.payload, claim.id, "1"]))

    def reap(self, claim_timeout: float) -> int:
        """Return claims older than ``claim_timeout`` seconds to the queue; how many were returned."""
        return int(self._reap(keys=[PROCESSING_KEY, CLAIMED_AT_KEY, QUEUE_KEY], args=[claim_timeout]))

    def lengths(self) -> dict[str, int]:
        return {key: int(self.redis.llen(key)) for key in (QUEUE_KEY, PROCESSING_KEY, DEAD_KEY)}
