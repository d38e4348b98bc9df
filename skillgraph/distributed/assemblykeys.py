"""The Redis side of assembly: its keys beyond :class:`BuildKeys`, and the scripts that write them.

Page and skip records are hash values ``"<rank> <seq> <json>"`` (:data:`PUT`):
``seq`` is the order in which the fleet first met the URL; ``rank`` settles two
workers' answers for one URL, lower wins: a page fetched (0) over one carried
from a live graph (1); a fetch outcome (0) over a content duplicate (1), over a
dupefilter duplicate (2: in a fleet, the dupefilter drops every link another
worker queued first), over a skip kept from the live graph (3). Redis scripts,
so two workers writing one URL never interleave.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from skillgraph.distributed.keys import BuildKeys, FrontierKeys

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

PAGE_FETCHED, PAGE_CARRIED = 0, 1
SKIP_FETCHED, SKIP_ALIAS, SKIP_DUPLICATE, SKIP_PREVIOUS = 0, 1, 2, 3

#: KEYS[1]: a hash. ARGV[1]: TTL seconds, then (field, rank, json) triples. Returns the fields written.
PUT = """
local written = 0
for i = 2, #ARGV, 3 do
  local rank = tonumber(ARGV[i + 1])
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  local seq = nil
  if old then
    local r, s = string.match(old, '^(%d+) (%d+) ')
    if rank <= tonumber(r) then seq = s end
  else
    seq = redis.call('HLEN', KEYS[1]) + 1
  end
  if seq then
    redis.call('HSET', KEYS[1], ARGV[i], rank .. ' ' .. seq .. ' ' .. ARGV[i + 2])
    written = written + 1
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return written
"""

#: KEYS: requests, dupefilter, profile, detection lock, then the shares' keys (pages first).
#: A frontier with nothing queued, seen, detected or being detected starts a new build (as the fleet limits
#: decide it): an earlier build's shares, never assembled, are deleted. Returns the pages they held, or -1.
FRESH = """
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) > 0 then return -1 end
local pages = redis.call('HLEN', KEYS[5])
redis.call('DEL', unpack(KEYS, 5))
return pages
"""


@dataclass(frozen=True)
class AssemblyKeys(BuildKeys):
    """BuildKeys plus the keys only assembly uses."""

    @classmethod
    def for_frontier(cls, frontier: str) -> AssemblyKeys:
        return cls(BuildKeys.for_frontier(frontier).prefix)

    @property
    def outside(self) -> str:
        """Set of links outside the scope (``skipped_counts["out-of-scope"]``, never listed)."""
        return self.prefix + "outside"

    @property
    def shares(self) -> str:
        """Hash ``worker -> summary`` (profile, seeds, truncation, sitemap URLs out of scope)."""
        return self.prefix + "shares"

    @property
    def lock(self) -> str:
        """Held by the process writing the graph (the last worker out, or ``scrapy assemble``)."""
        return self.prefix + "assembling"

    @property
    def share_keys(self) -> list[str]:
        """What the workers hand over (pages first)."""
        return [self.pages, self.skipped, self.warnings, self.outside, self.shares]

    def frontier(self, settings: BaseSettings) -> FrontierKeys:
        """The keys of the frontier this build runs on, named as the scheduler names them."""
        from scrapy_redis import defaults

        return FrontierKeys.for_name(self.prefix.removesuffix(":build:"),
                                     settings.get("SCHEDULER_QUEUE_KEY") or defaults.SCHEDULER_QUEUE_KEY,
                                     settings.get("SCHEDULER_DUPEFILTER_KEY") or defaults.SCHEDULER_DUPEFILTER_KEY)
