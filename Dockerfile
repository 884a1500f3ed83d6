# Boxfish: API + analysis workers (+ an embedded Redis unless REDIS_URL is set).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    BOXFISH_DATA_DIR=/data

RUN useradd --create-home --uid 10001 boxfish \
    && mkdir -p /data /app \
    && chown boxfish:boxfish /data

WORKDIR /app
COPY pyproject.toml README.md openapi.yaml ./
COPY engine ./engine
COPY service ./service
COPY workers ./workers
RUN pip install . && rm -rf build

USER boxfish
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"
CMD ["boxfish", "serve", "--host", "0.0.0.0"]
