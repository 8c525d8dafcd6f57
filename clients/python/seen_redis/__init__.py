"""seen_redis — typed methods for the seen Redis module's SEEN.* commands
on redis-py clients (single server and Cluster, synchronous and asyncio).

    import redis
    from seen_redis import Seen

    seen = Seen(redis.Redis())
    seen.add("{user:42}played", ["v1", "v2"])
    unseen = seen.filter(["{user:42}delivered", "{user:42}played"], candidates)
"""
from ._commands import CrossSlotError, SeenError
from .client import AsyncSeen, Seen

__all__ = ["Seen", "AsyncSeen", "SeenError", "CrossSlotError"]
__version__ = "0.1.0"
