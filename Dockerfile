# syntax=docker/dockerfile:1
# hookguard's image. The build steps live in scripts/build.sh, which is tested without Docker
# (test/build/image-build.test.ts): this file only runs it and copies its output.

# Build: all dependencies, TypeScript compiled, then a folder with the production dependencies only.
FROM node:20.19-bookworm-slim AS build
WORKDIR /src
COPY . .
RUN scripts/build.sh /out

# Runtime: Node.js 20 and nothing else (no shell, no package manager), as the nonroot user (65532).
FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
COPY --from=build /out/ /app/
USER 65532:65532
EXPOSE 8443
# `args` in the manifests choose the command: ["serve"] for the webhook, ["sweep", "--apply"] for the CronJob.
ENTRYPOINT ["/nodejs/bin/node", "/app/dist/cli/main.js"]
CMD ["serve"]
