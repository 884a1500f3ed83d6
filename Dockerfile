# Boxfish: the API, the analysis and webhook workers, and an embedded Redis unless REDIS_URL
# is set (see docs/compose.md). Two stages: "build" compiles the wheels (the
# compiled Dots-and-Boxes core included) with a C compiler and installs them into a virtual
# environment; the runtime stage takes that environment, without the compiler or pip, and
# runs as the non-root user boxfish.
#
#   docker build -t boxfish .
#   docker run -p 8000:8000 -v boxfish-data:/data boxfish
#
# Build arguments:
#   BASE_IMAGE   the runtime stage's base: a Debian-like image with python3 (3.11+) whose
#                "python3 -m venv" works (default python:3.11-slim)
#   BUILD_IMAGE  the build stage's base: the same Python at the same path; gcc is installed
#                with apt-get unless present (default python:3.11-slim, which has the headers)
#   WHEELHOUSE   a folder of the build context holding every wheel and sdist needed: when
#                set, pip installs from it alone (an offline build); default: PyPI
ARG BUILD_IMAGE=python:3.11-slim
ARG BASE_IMAGE=python:3.11-slim

FROM ${BUILD_IMAGE} AS build
ARG WHEELHOUSE=
RUN if ! command -v gcc >/dev/null; then \
        apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev make \
        && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY . .
# The wheel is built (BOXFISH_REQUIRE_CORE: a core that does not compile fails the build,
# see setup.py) and installed with its dependencies into the virtual environment the runtime
# stage takes; pip itself stays behind. The last step refuses an environment whose analyses
# would run the pure-Python search.
RUN set -e; \
    if [ -n "$WHEELHOUSE" ]; then set -- --no-index --find-links "/src/$WHEELHOUSE"; fi; \
    python3 -m venv /opt/pip; \
    BOXFISH_REQUIRE_CORE=1 PIP_NO_CACHE_DIR=1 /opt/pip/bin/pip wheel "$@" --wheel-dir /wheels .; \
    python3 -m venv --without-pip /opt/boxfish; \
    PIP_NO_CACHE_DIR=1 /opt/pip/bin/pip --python /opt/boxfish/bin/python3 install \
        --no-index --find-links /wheels boxfish; \
    /opt/boxfish/bin/python3 -c "from boxfish.engine.dots.search import compiled; import sys; \
sys.exit(None if compiled.available() else 'no compiled core: ' + compiled.UNAVAILABLE_REASON)"

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/boxfish/bin:$PATH \
    BOXFISH_DATA_DIR=/data
RUN useradd --create-home --uid 10001 --user-group boxfish \
    && mkdir -p /data \
    && chown boxfish:boxfish /data
# The same Python as the build stage's, at the same path, so the environment runs as built.
COPY --from=build /opt/boxfish /opt/boxfish
RUN boxfish --help >/dev/null

USER boxfish
WORKDIR /home/boxfish
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s \
    CMD python3 -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('BOXFISH_PORT', '8000'), timeout=2)"
CMD ["boxfish", "serve", "--host", "0.0.0.0"]
