"""The RQ job functions of Boxfish (analyses, the engine's moves, webhook deliveries) and the
worker process that runs them (``boxfish worker``).

They import the application services and the store (and the engine and the settings), never
:mod:`service.http`: a worker runs without Flask.
"""
