# syntax=docker/dockerfile:1
# The signer: the only image that ever holds keys. It installs owliabot's core dependencies only
# (pyproject [project].dependencies: pydantic, PyYAML, typer, cryptography, coincurve,
# pycryptodome); no LLM SDK, chat library, web framework or web3 (tests/ops checks this).

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY signer ./signer
COPY policies ./policies
COPY skills_runtime ./skills_runtime
COPY companion_bridge ./companion_bridge
RUN python -m venv /venv \
    && /venv/bin/pip install --no-compile . \
    && /venv/bin/pip uninstall -y pip setuptools

FROM python:3.11-slim
ENV PATH=/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 OWLIA_HOME=/owlia
# uid 10001, primary group 10100 (owlia-sock): the socket it creates is 0660 in that group.
RUN groupadd --system --gid 10100 owlia-sock \
    && useradd --system --uid 10001 --gid 10100 --no-create-home --shell /usr/sbin/nologin owlia-signer \
    && mkdir -p /owlia/signer /run/owlia \
    && chown 10001:10100 /owlia /owlia/signer /run/owlia \
    && chmod 0700 /owlia /owlia/signer \
    && chmod 0750 /run/owlia
COPY --from=build /venv /venv
USER 10001:10100
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 CMD ["owlia", "signer", "status"]
ENTRYPOINT ["owlia"]
CMD ["signer", "serve", "--passphrase-file", "/run/secrets/signer_passphrase"]
