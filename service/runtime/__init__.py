"""The processes: the ``boxfish`` command (``serve``, ``worker``, ``bot``, ...), the supervisor
of the processes ``boxfish serve`` starts, and the embedded Redis it runs.

The outermost layer: it may import every other.
"""
