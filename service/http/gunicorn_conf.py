"""gunicorn configuration of the Boxfish API:
``gunicorn -c python:boxfish.service.http.gunicorn_conf boxfish.service.http.wsgi:app``
(``boxfish serve`` and the tests' servers use it; the command line adds the bind address,
processes and threads).

The worker class is gthread with RFC 9457 errors and read deadlines
(:mod:`boxfish.service.http.gunicorn_worker`). The request-line and header caps are explicit: beyond
them gunicorn answers 414 or 431 (``application/problem+json``) before the app runs.
"""

import gc

worker_class = "boxfish.service.http.gunicorn_worker.BoxfishWorker"

#: Longest request line (method, target with its query, version), in bytes; longer is 414.
limit_request_line = 4094
#: Most header fields a request may have; more is 431.
limit_request_fields = 64
#: Longest header field (name and value), in bytes; longer is 431.
limit_request_field_size = 8190

#: No control socket: gunicorn's default is one fixed path in the user's home directory,
#: shared by every instance on the machine (several API processes, the tests' servers).
control_socket_disable = True

#: The garbage collector's youngest-generation threshold in a worker (Python's default: 700
#: allocations). An append allocates hundreds of short-lived objects; collecting less often
#: costs some memory (at most this many young objects more) and saves CPU per request.
gc_threshold_0 = 10_000


def post_worker_init(worker):
    """Once a worker has loaded the app: everything loaded so far (modules, the app, the
    engine's tables), which lives as long as the worker, is moved out of the collector's
    generations (``gc.freeze``), so that the collections requests cause do not scan it again
    and again; and the youngest generation is collected less often (:data:`gc_threshold_0`).
    Objects made later are collected as usual."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gc_threshold_0, gen1, gen2)
