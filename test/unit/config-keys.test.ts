// The declaration of the configuration keys (src/config/keys.ts) and what is derived from it. The checks
// themselves are tested through loadConfig in config.test.ts.
import { describe, expect, it } from 'vitest';
import { configurationTable, TABLE_END, TABLE_START, withConfigurationTable } from '../../src/config/docs.js';
import { DEFAULTS, ENV_KEYS, KEYS } from '../../src/config/keys.js';
import { settingsOf } from '../../src/config/schema.js';

const settings = settingsOf(KEYS);

describe('the declaration', () => {
  it('declares each environment variable once, named HOOKGUARD_*', () => {
    const names = settings.flatMap(([, setting]) => (setting.spec.env ? [setting.spec.env] : []));
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^HOOKGUARD_[A-Z_]+$/);
    expect(Object.keys(ENV_KEYS)).toEqual(names);
  });

  it('gives every key a doc line: one sentence, one line', () => {
    for (const [path, setting] of settings) expect(setting.spec.doc, path).toMatch(/^[^\n]+\.$/);
  });

  it('bounds keys only by integer keys of their own group', () => {
    const reads = settings.flatMap(([path, setting]) => (setting.spec.reads ?? []).map((key) => [path, key]));
    expect(reads.map(([path]) => path)).toEqual([
      'server.headersTimeoutMs',
      'server.shutdownDelayMs',
      'certificates.certValidityDays',
      'rules.minRuntime.minRuntimeSeconds',
      'discovery.backoffMaxMs',
      'sweep.backoffMaxMs',
    ]);
    for (const [path, key] of reads) {
      const bound = `${path!.slice(0, path!.lastIndexOf('.'))}.${key}`;
      expect(typeof settings.find(([other]) => other === bound)?.[1].spec.default, `${path} reads ${bound}`).toBe(
        'number',
      );
    }
  });
});

describe('the configuration table', () => {
  const table = configurationTable().split('\n');

  it('has a row per key, in declaration order, and one for advisories', () => {
    expect(table.slice(2).map((row) => /^\| `([^`]+)`/.exec(row)?.[1])).toEqual([
      ...settings.map(([path]) => path),
      'advisories',
    ]);
  });

  it.each([
    ['server.port', '| `server.port` | 8443 | 1..65535 | `HOOKGUARD_PORT` | Port of the HTTPS server. |'],
    [
      'server.headersTimeoutMs',
      '| `server.headersTimeoutMs` | 5000 | 100..requestTimeoutMs |  | Headers not complete by then get 408 and the connection is closed. |',
    ],
    ['server.shutdownDelayMs', '| `server.shutdownDelayMs` | 5000 | 0..(shutdownTimeoutMs - 1000) |  |'],
    ['mode', '| `mode` | `enforce` | `enforce`, `audit` | `HOOKGUARD_MODE` |'],
    ['argocd.version', '| `argocd.version` | null | a version like 2.14.3, or null | `HOOKGUARD_ARGOCD_VERSION` |'],
    [
      'excludedNamespaces',
      '| `excludedNamespaces` | `[kube-system]` | a list of strings | `HOOKGUARD_EXCLUDED_NAMESPACES` (comma-separated) |',
    ],
    ['discovery.enabled', '| `discovery.enabled` | true | `true`, `false` | `HOOKGUARD_DISCOVERY_ENABLED` |'],
  ])('renders %s with its default, the values it accepts and its variable', (path, row) => {
    expect(table.find((line) => line.startsWith(`| \`${path}\` |`))).toContain(row);
  });

  it('shows the defaults loadConfig starts from', () => {
    expect(table).toContain(
      `| \`server.bodyLimitBytes\` | ${DEFAULTS.server.bodyLimitBytes} | 1024..67108864 |  | Larger request bodies get 413 (two 3 MB objects plus the review envelope). |`,
    );
  });

  it('replaces only what is between the markers', () => {
    const markdown = `# Configuration\n\nintro\n\n${TABLE_START}\n| stale |\n${TABLE_END}\n\nafter\n`;
    expect(withConfigurationTable(markdown)).toBe(
      `# Configuration\n\nintro\n\n${TABLE_START}\n${configurationTable()}\n${TABLE_END}\n\nafter\n`,
    );
    expect(() => withConfigurationTable('# no markers\n')).toThrow(/the markers are missing/);
  });
});
