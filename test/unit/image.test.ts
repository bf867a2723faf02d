import { describe, expect, it } from 'vitest';
import { imageRepository } from '../../src/core/image.js';

describe('imageRepository', () => {
  it.each([
    ['alpine', 'alpine'],
    ['alpine:3', 'alpine'],
    ['alpine@sha256:abc', 'alpine'],
    ['alpine:3@sha256:abc', 'alpine'],
    ['library/alpine', 'alpine'],
    ['docker.io/library/alpine:3', 'alpine'],
    ['docker.io/alpine', 'alpine'],
    ['index.docker.io/library/busybox:1.36', 'busybox'],
    ['registry-1.docker.io/bitnami/kubectl:1.30', 'bitnami/kubectl'],
    // Only a bare official image loses "library/": a deeper path is a repository of its own.
    ['docker.io/library/a/b', 'library/a/b'],
    ['bitnami/kubectl:latest', 'bitnami/kubectl'],
    ['registry.k8s.io/kubectl:v1.31.0', 'registry.k8s.io/kubectl'],
    // A registry's port is not a tag; "library/" means something only on Docker Hub.
    ['localhost:5000/kubectl:v1', 'localhost:5000/kubectl'],
    ['localhost:5000/library/kubectl', 'localhost:5000/library/kubectl'],
    ['ghcr.io/library/x', 'ghcr.io/library/x'],
    ['quay.io:443/org/img:tag@sha256:1', 'quay.io:443/org/img'],
    ['gcr.io/distroless/static-debian12:debug-nonroot', 'gcr.io/distroless/static-debian12'],
    // Registry names are matched exactly, as written.
    ['DOCKER.IO/library/alpine', 'DOCKER.IO/library/alpine'],
    // Malformed names give what is left, never an error.
    ['docker.io', 'docker.io'],
    ['docker.io/', ''],
    ['library/', ''],
    ['', ''],
    ['@sha256:x', ''],
    [':tag', ''],
  ])('%j is repository %j', (image, repository) => {
    expect(imageRepository(image)).toBe(repository);
  });
});
