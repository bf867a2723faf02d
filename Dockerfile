# syntax=docker/dockerfile:1
# hookguard's image. The build steps live in scripts/build.sh, which is tested without Docker
# (test/build/image-build.test.ts): this file only runs it and copies its output.

# Node.js 24 LTS in both stages, on Debian 13 (trixie) in both, each pinned by digest: a tag is moved by every
# rebuild, a digest is the image that was reviewed. The digests were found pinned in public Dockerfiles (no registry
# is reachable from where this was written); `docker buildx imagetools inspect <image>` shows a tag's current one.
# .ci/run tests on this same Node.js version (IMAGE_NODE), and test/build/image-build.test.ts keeps the two equal.

# Build: all dependencies, TypeScript compiled, then a folder with the production dependencies only.
FROM node:24.19.0-trixie-slim@sha256:0711b541c1c33a8a530ac4f0d391baa9a15b3d804695b1b24a47daa5fb60e74d AS build
WORKDIR /src
COPY . .
RUN scripts/build.sh /out

# Runtime: Node.js 24 and nothing else (no shell, no package manager), as the nonroot user (65532).
FROM gcr.io/distroless/nodejs24-debian13:nonroot@sha256:4ac45c93b6c4b2304876569196e5962e55e8ba4ba095e7dde7bf6d7e00efc3b8
WORKDIR /app
COPY --from=build /out/ /app/
USER 65532:65532
# The webhook's HTTPS port (the chart's webhook.port) and the plain-HTTP probes and metrics (probePort).
EXPOSE 8443 8080
# `args` in the chart choose the command: ["serve"] for the webhook, ["sweep", "--apply"] for the CronJob.
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/cli/main.js"]
CMD ["serve"]
