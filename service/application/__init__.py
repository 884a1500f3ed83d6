"""The application services: games and their moves, analyses, engine seats, webhooks and the
operations' checks, and their wiring on the store's and the job queue's Redis.

They import the store layer, :mod:`service.config`, :mod:`service.errors`, the engine, and RQ
and Redis for the job queue; never Flask nor anything of :mod:`service.http`, so that a worker
can run them.
"""
