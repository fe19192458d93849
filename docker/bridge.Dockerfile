# syntax=docker/dockerfile:1
# The companion bridge: pairs the companion app and relays Tier 1 approvals. Holds no key.
# Uses the `bot` extra until pyproject grows a smaller `bridge` extra.

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY signer ./signer
COPY policies ./policies
COPY skills_runtime ./skills_runtime
COPY companion_bridge ./companion_bridge
RUN python -m venv /venv \
    && /venv/bin/pip install --no-compile ".[bot]" \
    && /venv/bin/pip uninstall -y pip setuptools

FROM python:3.11-slim
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
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import ssl, urllib.request; urllib.request.urlopen('https://127.0.0.1:8765/v1/health', timeout=5, context=ssl._create_unverified_context())"]
ENTRYPOINT ["owlia"]
CMD ["bridge", "serve", "--host", "0.0.0.0", "--port", "8765", "--tls-cert", "/run/secrets/bridge_tls_cert", "--tls-key", "/run/secrets/bridge_tls_key"]
