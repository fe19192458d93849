# A local dev chain (the `anvil` compose profile): anvil from its npm package, at the version and
# integrity hash package-lock.json pins, on the same digest-pinned base as the other images. No
# moving tag, no node toolchain: the tarball is fetched and checked here.
ARG OWLIA_BASE_IMAGE=python:3.11.10-slim-bookworm@sha256:5148c0e4bbb64271bca1d3322360ebf4bfb7564507ae32dd639322e4952a6b16

FROM ${OWLIA_BASE_IMAGE} AS fetch
ARG ANVIL_VERSION=1.7.1
ARG ANVIL_INTEGRITY=sha512-+XmShybEaxfCrr0OUUZwYEy2OnYZt5pHH9TzBtLv3+VrK0O/ANuNSVEahqNhKHlgX7GRJ59383ofNhxkRWIYTg==
RUN python3 -c "import base64, hashlib, io, os, sys, tarfile, urllib.request; \
url = 'https://registry.npmjs.org/@foundry-rs/anvil-linux-amd64/-/anvil-linux-amd64-' + os.environ['ANVIL_VERSION'] + '.tgz'; \
data = urllib.request.urlopen(url, timeout=120).read(); \
algo, want = os.environ['ANVIL_INTEGRITY'].split('-', 1); \
sys.exit('anvil tarball integrity mismatch') if base64.b64encode(hashlib.new(algo, data).digest()).decode() != want else None; \
member = tarfile.open(fileobj=io.BytesIO(data)).extractfile('package/bin/anvil'); \
open('/anvil', 'wb').write(member.read()); os.chmod('/anvil', 0o755)"

FROM ${OWLIA_BASE_IMAGE}
COPY --from=fetch /anvil /usr/local/bin/anvil
USER 10004:10004
ENV HOME=/tmp
EXPOSE 8545
ENTRYPOINT ["anvil"]
CMD ["--host", "0.0.0.0", "--port", "8545"]
