// `hookguard check --output sarif|junit`: the reports CI systems read. The SARIF log is validated against the
// SARIF 2.1.0 JSON schema OASIS published (the copy @microsoft/jest-sarif ships), and both are asserted exactly: each
// result at its file and line, with the level or failure its action means.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import { builtInRules, catalogOf } from '../../src/rules/index.js';
import { runCommand } from '../support/command.js';
import { OPTED_OUT_JOB as OPTED_OUT_JOB_MANIFEST } from '../support/manifests-text.js';
import { repoRoot } from '../support/k8s-tools.js';

const require = createRequire(import.meta.url);

const CONFIGMAP = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ns
`;

const OPTED_OUT_JOB = `# Source: app/templates/job.yaml\n${OPTED_OUT_JOB_MANIFEST}`;

const RACE =
  'Job apps/fast races with Argo CD 3.1.0 (argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends): min-runtime opted out with hookguard.io/skip. Fix: remove min-runtime from hookguard.io/skip, or upgrade to Argo CD 3.4.0, which fixed the race.';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-check-formats-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const manifest = join(dir, 'manifests.yaml');
writeFileSync(manifest, `${CONFIGMAP}---\n${OPTED_OUT_JOB}`);

/**
 * The SARIF 2.1.0 schema. It is draft-04, whose keywords Ajv 8 reads but for the root's schema id, spelt `id` there
 * and `$id` since draft-06; its formats are checked as the schema means them.
 */
function sarifValidator() {
  const schema = JSON.parse(
    readFileSync(require.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'), 'utf8'),
  ) as Record<string, unknown>;
  delete schema.$schema;
  schema.$id = schema.id;
  delete schema.id;
  // unicodeRegExp off: the schema's language pattern (`^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`) is valid only without u.
  const ajv = new Ajv({ strict: false, allErrors: true, unicodeRegExp: false });
  ajv.addFormat('uri', (value: string) => URL.canParse(value));
  ajv.addFormat('uri-reference', (value: string) => URL.canParse(value, 'file:///'));
  ajv.addFormat('date-time', (value: string) => !Number.isNaN(Date.parse(value)));
  return ajv.compile(schema);
}

describe('hookguard check --output sarif', () => {
  const validate = sarifValidator();

  it('the validator refuses what SARIF 2.1.0 does not allow', () => {
    expect(
      validate({ version: '2.1.0', runs: [{ tool: { driver: { name: 'x' } }, results: [{ level: 'fatal' }] }] }),
    ).toBe(false);
  });

  it('is a SARIF 2.1.0 log: every rule with its help naming the catalog, one result per finding at file and line', async () => {
    const run = await runCommand(['check', manifest, '-o', 'sarif', '--argocd-version', '3.1.0']);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('');
    const sarif = JSON.parse(run.stdout);
    expect(validate(sarif), JSON.stringify(validate.errors, null, 2)).toBe(true);

    const { driver } = sarif.runs[0].tool;
    expect(driver.name).toBe('hookguard');
    expect(driver.version).toBe(JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).version);
    const ids = [...new Set(catalogOf(builtInRules).map((rule) => rule.id))];
    expect(driver.rules.map((rule: { id: string }) => rule.id)).toEqual(ids);
    // hookguard has no published home: no address that may not exist (issue 42 item 7), the catalog by its path.
    expect(driver).not.toHaveProperty('informationUri');
    for (const rule of driver.rules) {
      expect(rule).not.toHaveProperty('helpUri');
      expect(rule.help.text).toBe(
        `${rule.fullDescription.text}\nSee docs/rules.md, "The rule catalog", in hookguard's source.`,
      );
    }
    // The heading the help names is the catalog's in docs/rules.md.
    expect(readFileSync(join(repoRoot, 'docs', 'rules.md'), 'utf8')).toContain('\n## The rule catalog\n');
    // A rule that both mutates and denies says both, each in its own words.
    const restart = driver.rules.find((rule: { id: string }) => rule.id === 'hook-pod-restart-policy');
    expect(restart.fullDescription.text.split('\n').map((line: string) => line.split(':')[0])).toEqual([
      'mutating, CREATE, at admission and render time',
      'validating, CREATE, at render time',
    ]);

    const at = {
      physicalLocation: {
        artifactLocation: { uri: `file://${manifest}` },
        region: { startLine: 7, snippet: { text: '# Source: app/templates/job.yaml' } },
      },
      logicalLocations: [{ fullyQualifiedName: 'Job apps/fast', kind: 'object' }],
    };
    const index = (id: string) => ids.indexOf(id);
    expect(sarif.runs[0].results).toEqual([
      {
        ruleId: 'delete-policy',
        ruleIndex: index('delete-policy'),
        level: 'note',
        message: {
          text: 'set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: a succeeded hook is deleted at once instead of staying until its next run',
        },
        locations: [at],
        properties: { object: 'Job apps/fast', document: 2 },
      },
      {
        ruleId: 'hook-deadline',
        ruleIndex: index('hook-deadline'),
        level: 'warning',
        message: { text: 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever' },
        locations: [at],
        properties: { object: 'Job apps/fast', document: 2 },
      },
      {
        ruleId: 'version-race',
        ruleIndex: index('version-race'),
        level: 'error',
        message: { text: RACE },
        locations: [at],
        properties: { object: 'Job apps/fast', document: 2, advisory: 'argocd-fast-hook-finalizer-race' },
      },
    ]);
  });

  it('a warning is a warning; standard input is located at "stdin"', async () => {
    const job = OPTED_OUT_JOB.replace(
      'hookguard.io/skip: min-runtime',
      'argocd.argoproj.io/sync-options: Replace=true',
    );
    const run = await runCommand(['check', '-', '-o', 'sarif', '--argocd-version', '3.4.0'], job);
    const sarif = JSON.parse(run.stdout);
    expect(validate(sarif), JSON.stringify(validate.errors, null, 2)).toBe(true);
    const warned = sarif.runs[0].results.filter((result: { level: string }) => result.level === 'warning');
    expect(warned.map((result: { ruleId: string }) => result.ruleId)).toEqual(['hook-deadline', 'hook-sync-options']);
    expect(warned[1].locations[0].physicalLocation.artifactLocation.uri).toBe('stdin');
  });

  it('locates a file named by a relative path relative to where check ran, as code scanning resolves it', async () => {
    const relativePath = relative(process.cwd(), manifest);
    const sarif = JSON.parse((await runCommand(['check', relativePath, '-o', 'sarif'])).stdout);
    expect(sarif.runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri).toBe(relativePath);
  });

  it('with --chart-root, points at the template Helm names, repository-relative, and still validates', async () => {
    const rendered = `---\n${OPTED_OUT_JOB}`;
    const run = await runCommand(
      ['check', '-', '-o', 'sarif', '--argocd-version', '3.1.0', '--chart-root', './charts/app/'],
      rendered,
    );
    const sarif = JSON.parse(run.stdout);
    expect(validate(sarif), JSON.stringify(validate.errors, null, 2)).toBe(true);
    const [denial] = sarif.runs[0].results.filter((result: { level: string }) => result.level === 'error');
    expect(denial.locations[0].physicalLocation).toEqual({
      artifactLocation: { uri: 'charts/app/templates/job.yaml' },
      region: { startLine: 1 },
    });
    expect(denial.properties).toEqual({
      object: 'Job apps/fast',
      document: 1,
      advisory: 'argocd-fast-hook-finalizer-race',
      rendered: 'stdin:2',
    });
  });
});

describe('hookguard check --output junit', () => {
  it('one test case per object, a failure per denial, the other findings as its output', async () => {
    const run = await runCommand(['check', manifest, '--output', 'junit', '--argocd-version', '3.1.0']);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe(
      [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<testsuites name="hookguard check" tests="2" failures="1" errors="0">',
        `  <testsuite name="${manifest}" tests="2" failures="1" errors="0" skipped="0">`,
        `    <testcase name="ConfigMap ns/settings" classname="${manifest}" file="${manifest}" line="1"/>`,
        `    <testcase name="Job apps/fast" classname="${manifest}" file="${manifest}" line="7">`,
        `      <failure type="version-race" message="version-race: ${RACE}">Job apps/fast at ${manifest}:7 (document 2)`,
        `${RACE}</failure>`,
        '      <system-out>mutate delete-policy: set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: a succeeded hook is deleted at once instead of staying until its next run',
        'warn hook-deadline: no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever</system-out>',
        '    </testcase>',
        '  </testsuite>',
        '</testsuites>',
        '',
      ].join('\n'),
    );
  });

  it('with --chart-root, one test suite per template, each case at the template and where it was rendered', async () => {
    const run = await runCommand(
      ['check', '-', '-o', 'junit', '--argocd-version', '3.1.0', '--chart-root', 'charts/app'],
      `---\n${OPTED_OUT_JOB}`,
    );
    const file = 'charts/app/templates/job.yaml';
    expect(run.stdout.split('\n').slice(2, 5)).toEqual([
      `  <testsuite name="${file}" tests="1" failures="1" errors="0" skipped="0">`,
      `    <testcase name="Job apps/fast" classname="${file}" file="${file}" line="1">`,
      `      <failure type="version-race" message="version-race: ${RACE}">Job apps/fast at ${file} (stdin:2, document 1)`,
    ]);
  });

  it('escapes what XML would otherwise read as markup', async () => {
    const run = await runCommand(
      ['check', '-', '-o', 'junit'],
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a<&>"b\'\n',
    );
    expect(run.stdout).toContain(
      '<testcase name="ConfigMap a&lt;&amp;&gt;&quot;b&apos;" classname="stdin" file="stdin" line="1"/>',
    );
  });
});
