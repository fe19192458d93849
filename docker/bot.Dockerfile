# syntax=docker/dockerfile:1
# The bot: LLM SDKs, chat channels, the loopback gateway. Holds no key; reaches the signer only
# through the socket volume, as uid 10002 in group 10100.

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
    && groupadd --system --gid 10002 owlia-bot \
    && useradd --system --uid 10002 --gid 10002 --groups owlia-sock --no-create-home --shell /usr/sbin/nologin owlia-bot \
    && mkdir -p /owlia/secrets /owlia/workspace /run/owlia \
    && chown 10002:10002 /owlia /owlia/secrets /owlia/workspace \
    && chmod 0700 /owlia /owlia/secrets /owlia/workspace \
    && chown 10001:10100 /run/owlia && chmod 0750 /run/owlia
COPY --from=build /venv /venv
USER 10002:10002
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8787/health', timeout=5)"]
ENTRYPOINT ["owlia"]
CMD ["start"]
