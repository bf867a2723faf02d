// The hooks of test/golden/why/: each a Job or Pod with its Pods and Events as the kubelet, the job controller, the
// scheduler and the API server write them, with the upstream source of each message format in its `provenance`.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { HookEvidence } from '../../src/core/explain/index.js';
import { repoRoot } from './k8s-tools.js';

const WHY_FIXTURES = join(repoRoot, 'test', 'golden', 'why');

export interface WhyFixture extends HookEvidence {
  provenance: string[];
  /** The moment the fixture describes: ages are counted from it. */
  now: string;
}

export function whyFixtureNames(): string[] {
  return readdirSync(WHY_FIXTURES)
    .filter((file) => file.endsWith('.json'))
    .map((file) => file.replace(/\.json$/, ''))
    .sort();
}

export function whyFixture(name: string): WhyFixture {
  return JSON.parse(readFileSync(join(WHY_FIXTURES, `${name}.json`), 'utf8')) as WhyFixture;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/**
 * The fixture as if it were described at `now` (ms): every timestamp moved by the same amount, so the ages a command
 * computes from the real clock are the fixture's; and moved into `namespace`.
 */
export function relocated(fixture: WhyFixture, now: number, namespace = 'shop'): WhyFixture {
  const delta = now - Date.parse(fixture.now);
  const move = (value: unknown): unknown => {
    if (typeof value === 'string' && TIMESTAMP.test(value)) {
      const moved = new Date(Date.parse(value) + delta).toISOString();
      return value.includes('.') ? moved : moved.replace(/\.\d{3}Z$/, 'Z');
    }
    if (Array.isArray(value)) return value.map(move);
    if (typeof value === 'object' && value !== null)
      return Object.fromEntries(
        Object.entries(value).map(([key, entry]) => [
          key,
          key === 'namespace' && entry === 'shop' ? namespace : move(entry),
        ]),
      );
    return value;
  };
  return move(fixture) as WhyFixture;
}
