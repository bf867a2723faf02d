import semver from 'semver';
import type { Advisory } from './types.js';

/**
 * A usable Argo CD version from an image tag or label ("v2.14.3", "2.14.3+a1b2c3"), or undefined when the
 * value says nothing about the code that runs ("latest", a digest, a branch name).
 */
export function normalizeArgoVersion(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const cleaned = semver.clean(raw.trim());
  return cleaned ?? undefined;
}

export function versionInRange(version: string, range: string): boolean {
  return semver.satisfies(version, range, { includePrerelease: true });
}

export function advisoryAffects(advisory: Advisory, version: string): boolean {
  return versionInRange(version, advisory.affected);
}

export function isValidRange(range: string): boolean {
  return semver.validRange(range) !== null;
}
