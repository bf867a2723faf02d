// `hookguard why` refusing its arguments: exit 2 before any cluster is read, so no API server is needed. Every state
// it explains, -A and --application are in test/cluster/why.test.ts and test/cluster/why-states.test.ts, on the real
// control plane.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-why-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('hookguard why: bad arguments exit 2 before any cluster is read', () => {
  const refused: Array<[string[], string]> = [
    [
      ['why'],
      'hookguard why: name one hook (job/NAME or pod/NAME), or --application NS/NAME, --release NS/NAME, --helmrelease NS/NAME, or -A\n',
    ],
    [['why', 'deployment/web'], 'hookguard why: "deployment/web" is not job/NAME or pod/NAME\n'],
    [
      ['why', 'job/a', '-A'],
      'hookguard why: name one hook (job/NAME or pod/NAME), or --application NS/NAME, --release NS/NAME, --helmrelease NS/NAME, or -A\n',
    ],
    [['why', '--application', 'shop'], 'hookguard why: --application "shop" is not NAMESPACE/NAME\n'],
    [['why', '-A', '-n', 'shop'], 'hookguard why: -n goes with job/NAME or pod/NAME, and must not be empty\n'],
    [['why', '-A', '--output', 'yaml'], 'hookguard why: --output must be text or json, got "yaml"\n'],
    [
      ['why', '-A', '--stuck-after-seconds', '5'],
      'hookguard why: --stuck-after-seconds: must be an integer 30..86400, got 5\n',
    ],
    [['why', '-A', '--revision', '2'], 'hookguard why: --revision goes with --release\n'],
    [
      ['why', '--release', 'shop/web', '--revision', '0'],
      'hookguard why: --revision "0" is not a revision number (1, 2, …)\n',
    ],
    [['why', '--release', 'web'], 'hookguard why: --release "web" is not NAMESPACE/NAME\n'],
  ];
  for (const [args, stderr] of refused) {
    it(args.join(' '), async () => {
      // A kubeconfig that is not there: the arguments are refused before it is looked for.
      const run = await runCommand(args, undefined, { KUBECONFIG: join(dir, 'no-such-kubeconfig') });
      expect(run.stderr).toBe(stderr);
      expect(run.stdout).toBe('');
      expect(run.status).toBe(2);
    });
  }
});
