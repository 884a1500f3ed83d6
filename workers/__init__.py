"""RQ job functions and the worker process of Boxfish (``boxfish worker``)."""
