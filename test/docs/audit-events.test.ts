// Audit mode stops the hook watcher's HookFailed/HookStuck Events (issue 42.15): the watcher follows only hooks
// labelled hookguard.io/hook, which audit mode withholds. Said where a team trying hookguard in audit mode reads.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KEYS } from '../../src/config/keys.js';
import { repoRoot } from '../support/k8s-tools.js';

const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8');

describe('audit mode and the hook watcher', () => {
  it("the config's mode and hookWatch.enabled say it, and the generated docs carry it", () => {
    expect(KEYS.mode.spec.doc).toContain(
      "It also stops the hook watcher's HookFailed/HookStuck Events: the watcher follows only hooks carrying the label hookguard.io/hook, which audit mode withholds like every change",
    );
    expect(KEYS.hookWatch.enabled.spec.doc).toContain('In audit mode no hook gets the label, so no Event is posted.');
    expect(read('docs/configuration.md')).toContain("It also stops the hook watcher's HookFailed/HookStuck Events");
  });

  it("the chart's values.yaml comments and README say it", () => {
    const values = read('charts/hookguard/values.yaml');
    expect(values).toContain(
      "# audit: nothing is patched or denied; every decision becomes an admission warning and an audit log line. The hook\n# watcher's HookFailed/HookStuck Events stop too",
    );
    expect(values).toContain(
      '# Jobs and Pods, read Events and Applications, create Events. In audit mode (mode above) no hook gets the label,\n  # so no Event is posted.',
    );
    const readme = read('charts/hookguard/README.md');
    expect(readme).toContain('the hook watcher posts no `HookFailed`/`HookStuck` Events');
    expect(readme).toContain('none in audit mode, where no hook gets the label it follows');
  });
});
