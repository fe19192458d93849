# The companion bridge: pairs the companion app and relays Tier 1 approvals. Holds no key.
# Dependencies: requirements/bridge.txt (core + [bridge]: no LLM SDK, no chat library).
ARG OWLIA_BASE_IMAGE=python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16

FROM ${OWLIA_BASE_IMAGE} AS build
# PyPI only, whatever pip configuration the base carries; every dependency hash-checked from the lock.
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CONFIG_FILE=/dev/null \
    PIP_INDEX_URL=https://pypi.org/simple
WORKDIR /src
COPY requirements/bridge.txt requirements/
RUN python3 -m venv /venv \
    && /venv/bin/pip install --only-binary=:all: --require-hashes -r requirements/bridge.txt \
    && /venv/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash /venv/lib
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY signer ./signer
COPY policies ./policies
COPY skills_runtime ./skills_runtime
COPY companion_bridge ./companion_bridge
# The root filesystem is read-only at run time: every module is compiled here (unchecked-hash: no
# source stat per import) so no start pays for it; the dependencies above, in their own cached layer.
RUN /venv/bin/pip install --no-deps --no-compile . \
    && /venv/bin/pip uninstall -y -q pip setuptools \
    && cd /venv/lib/python3.*/site-packages \
    && /venv/bin/python -m compileall -q -j 0 --invalidation-mode unchecked-hash \
        bot signer policies skills_runtime companion_bridge

FROM ${OWLIA_BASE_IMAGE}
ENV PATH=/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 OWLIA_HOME=/owlia
RUN groupadd --system --gid 10100 owlia-sock \
    && groupadd --system --gid 10003 owlia-bridge \
    && useradd --system --uid 10003 --gid 10003 --groups owlia-sock --no-create-home --shell /usr/sbin/nologin owlia-bridge \
    && mkdir -p /owlia/secrets /run/owlia \
    && chown 10003:10003 /owlia /owlia/secrets && chmod 0700 /owlia /owlia/secrets \
    && chown 10001:10100 /run/owlia && chmod 0750 /run/owlia
COPY --from=build /venv /venv
USER 10003:10003
EXPOSE 8765
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-I", "-S", "-c", "import ssl, urllib.request; urllib.request.urlopen('https://127.0.0.1:8765/v1/health', timeout=5, context=ssl._create_unverified_context())"]
ENTRYPOINT ["owlia"]
CMD ["bridge", "serve", "--host", "0.0.0.0", "--port", "8765", "--tls-cert", "/run/secrets/bridge_tls_cert", "--tls-key", "/run/secrets/bridge_tls_key"]
