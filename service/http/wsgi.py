"""WSGI entry point for gunicorn: ``gunicorn 'boxfish.service.http.wsgi:app'`` (settings from the
environment; ``REDIS_URL`` must be set)."""

from .app import create_app

app = create_app()
