# syntax=docker/dockerfile:1
#
# bertserve container image.
#
#   docker build -t bertserve:0.1.0 .
#   docker run --rm -p 8080:8080 --cpus 2 bertserve:0.1.0
#
# The image serves the checkpoint baked in at
# /usr/local/share/bertserve/models/default (the build context's
# models/default). Another checkpoint: mount it under /models and name it,
#   docker run -v /srv/models:/models:ro -e BERTSERVE_MODEL_PATH=/models/NAME ...
#
# Configuration: BERTSERVE_<SECTION>_<KEY> environment variables (e.g.
# -e BERTSERVE_SERVER_MAX_CONCURRENT_REQUESTS=256), and optionally a TOML
# file: -v ./config.toml:/etc/bertserve/config.toml:ro
#        -e BERTSERVE_CONFIG=/etc/bertserve/config.toml
# Variables override the file; flags after the image name override both
# (docker run IMAGE bertserve --port 9000). config.example.toml lists every key.
# The image sets no BERTSERVE_* variable itself, so a mounted file is never
# silently overridden.
#
# Worker and BLAS thread counts follow the CPUs the container may use
# (--cpus, or a Kubernetes CPU limit): leave [workers] at 0 unless you know
# better. SIGTERM drains (up to [server] shutdown_timeout_ms, 30 s) and exits
# 0; give `docker stop -t 40` or a longer grace period than that.

ARG DEBIAN_RELEASE=bookworm

# ---- build ----------------------------------------------------------------
FROM debian:${DEBIAN_RELEASE} AS build
# python3-minimal: configuring the tests/ folder looks it up (tests are not
# built here).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libjansson-dev libuv1-dev \
      libopenblas-dev libutf8proc-dev libdnnl-dev python3-minimal \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Sources only: a new checkpoint in models/ does not rebuild the binaries.
COPY CMakeLists.txt config.example.toml ./
COPY base base
COPY tokenizer tokenizer
COPY model model
COPY train train
COPY proto proto
COPY cli cli
COPY server server
COPY tests tests
COPY deploy/systemd deploy/systemd
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build -j"$(nproc)" --target bertserve bert_cli \
 && DESTDIR=/staging cmake --install build --prefix /usr/local

# ---- runtime --------------------------------------------------------------
FROM debian:${DEBIAN_RELEASE}-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libjansson4 libuv1 libopenblas0-pthread libutf8proc2 libdnnl2 libgomp1 curl \
 && rm -rf /var/lib/apt/lists/*
# A fixed numeric user, so Kubernetes' runAsNonRoot can check it.
RUN groupadd --system --gid 10001 bertserve \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin bertserve \
 && mkdir /models
COPY --from=build /staging/usr/local/ /usr/local/
COPY models/default /usr/local/share/bertserve/models/default
# AWS SageMaker runs the image as `docker run IMAGE serve`.
COPY deploy/sagemaker/serve /usr/local/bin/serve
# [model] path defaults to "models/default", relative to this folder.
WORKDIR /usr/local/share/bertserve
USER 10001:10001

LABEL org.opencontainers.image.title="bertserve" \
      org.opencontainers.image.description="HTTP inference for BERT-family encoders: fill-mask, classify, embed" \
      org.opencontainers.image.version="0.1.0" \
      io.bertserve.models-mount="/models"

EXPOSE 8080
STOPSIGNAL SIGTERM
# /health: the model is loaded and the workers run. `--health-check` reads
# the server's own config (BERTSERVE_CONFIG file, environment, flags), so it
# follows the port wherever it was set.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["bertserve", "--health-check"]
CMD ["bertserve"]
