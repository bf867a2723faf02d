import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from './k8s-tools.js';
import type { KubeObject } from '../../src/core/types.js';

/** ../shared/fixtures beside the checkout: real hook Jobs and Pods rendered by real Helm (see its INDEX.md). */
export const sharedFixturesDir = join(repoRoot, '..', 'shared', 'fixtures');
export const haveSharedFixtures = existsSync(sharedFixturesDir);
export const SKIP_MESSAGE = `skipped: ${sharedFixturesDir} is absent (the shared fixtures live beside the checkout)`;
// Vitest's default reporter does not print skipped test names; say it where every run shows it.
if (!haveSharedFixtures) console.warn(`hookguard tests: golden and fixture tests ${SKIP_MESSAGE}`);

export interface Fixture {
  file: string;
  object: KubeObject;
}

export function loadSharedFixtures(): Fixture[] {
  if (!haveSharedFixtures) return [];
  return readdirSync(sharedFixturesDir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => ({ file, object: parse(readFileSync(join(sharedFixturesDir, file), 'utf8')) as KubeObject }));
}
