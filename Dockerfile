# slotest in a container: the load-shard image for deploy/kubernetes/ and CI runners.
#   docker build -t slotest .                       (plain HTTP targets: in-cluster engines)
#   docker build --build-arg FEATURES=tls -t slotest .   (HTTPS targets too)
# Stage 1 builds the release binary (the `dist` profile: fat LTO, as the downloads are); stage 2 is a slim Debian with that binary and the suites,
# run as an unprivileged user. Results go to /results (mount a volume there).

FROM rust:1.95-slim-bookworm AS build
ARG FEATURES=""
WORKDIR /src
# The manifest's [[test]] targets and workspace members must exist for cargo to read it; the
# tests are not built.
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY assets ./assets
COPY tests ./tests
COPY examples/user-crate ./examples/user-crate
RUN cargo build --profile dist --locked --bin slotest --features "${FEATURES}" \
    && strip target/dist/slotest

FROM debian:bookworm-slim
RUN groupadd --gid 10001 slotest \
    && useradd --uid 10001 --gid slotest --no-create-home --home-dir /results slotest \
    && mkdir -p /results \
    && chown slotest:slotest /results
COPY --from=build /src/target/dist/slotest /usr/local/bin/slotest
COPY suites /opt/slotest/suites
COPY baselines /opt/slotest/baselines
WORKDIR /opt/slotest
USER 10001:10001
ENTRYPOINT ["/usr/local/bin/slotest"]
CMD ["--help"]
