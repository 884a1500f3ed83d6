"""The storage layer: the event log of moves (the recorder, in memory or on Redis), the games'
webhook registrations kept with them, the rate limits' counters, the Redis keys, and the
connections to Redis.

It imports only :mod:`service.config`, :mod:`service.errors` and Redis: nothing of the
application services, the HTTP API or the workers.
"""
