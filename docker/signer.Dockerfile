# The signer: the only image that ever holds keys. It installs owliabot's core dependencies only
# (requirements/signer.txt, the lock of pyproject [project].dependencies); no LLM SDK, chat
# library, web framework or web3 (tests/ops checks this). No BuildKit syntax directive: nothing here needs
# a frontend pulled from a registry. OWLIA_BASE_IMAGE is pinned by digest; a host without a
# registry passes its own (see docs/self-hosting.md).
ARG OWLIA_BASE_IMAGE=python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16

FROM ${OWLIA_BASE_IMAGE} AS build
# PyPI only, whatever pip configuration the base carries; every dependency hash-checked from the lock.
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_CONFIG_FILE=/dev/null \
    PIP_INDEX_URL=https://pypi.org/simple
WORKDIR /src
COPY requirements/signer.txt requirements/
RUN python3 -m venv /venv \
    && /venv/bin/pip install --only-binary=:all: --require-hashes -r requirements/signer.txt \
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
# uid 10001, primary group 10100 (owlia-sock): the socket it creates is 0660 in that group.
RUN groupadd --system --gid 10100 owlia-sock \
    && useradd --system --uid 10001 --gid 10100 --no-create-home --shell /usr/sbin/nologin owlia-signer \
    && mkdir -p /owlia/signer /run/owlia \
    && chown 10001:10100 /owlia /owlia/signer /run/owlia \
    && chmod 0700 /owlia /owlia/signer \
    && chmod 0750 /run/owlia
COPY --from=build /venv /venv
USER 10001:10100
# Cheap: is the socket accepting? (-I -S: no site, a few ms; the full CLI took ~0.5 s.)
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-I", "-S", "-c", "import socket; socket.socket(socket.AF_UNIX).connect('/run/owlia/signer.sock')"]
ENTRYPOINT ["owlia"]
CMD ["signer", "serve", "--passphrase-file", "/run/secrets/signer_passphrase"]
