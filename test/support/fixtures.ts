import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from './k8s-tools.js';
import type { KubeObject } from '../../src/core/types.js';

/**
 * test/fixtures: real hook Jobs and Pods rendered by real Helm or committed by Argo CD, one per file, each opening
 * with a `# source:` line (repository, path, commit); test/fixtures/INDEX.md says how each was made.
 */
export const fixturesDir = join(repoRoot, 'test', 'fixtures');

/** The fewest fixture files there are: a missing or emptied folder fails every reader instead of testing nothing. */
const LEAST_FIXTURES = 20;

export interface Fixture {
  file: string;
  object: KubeObject;
}

/** The fixture file names, sorted; throws when the folder is missing or holds fewer than it should. */
export function fixtureFiles(): string[] {
  const files = readdirSync(fixturesDir)
    .filter((file) => file.endsWith('.yaml'))
    .sort();
  if (files.length < LEAST_FIXTURES) {
    throw new Error(`${fixturesDir} holds ${files.length} fixtures, fewer than ${LEAST_FIXTURES}`);
  }
  return files;
}

/** One fixture's path, which must exist. */
export function fixturePath(file: string): string {
  return join(fixturesDir, file);
}

/** One fixture's text, as committed. */
export function fixtureText(file: string): string {
  return readFileSync(fixturePath(file), 'utf8');
}

export function loadFixtures(): Fixture[] {
  return fixtureFiles().map((file) => ({ file, object: parse(fixtureText(file)) as KubeObject }));
}
