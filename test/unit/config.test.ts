import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { DEFAULTS, ENV_KEYS } from '../../src/config/keys.js';
import { loadConfig, type ConfigSources } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { decide } from '../../src/core/decide.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-config-'));
let written = 0;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a YAML config file and returns its path. */
function yamlFile(text: string): string {
  const path = join(dir, `config-${++written}.yaml`);
  writeFileSync(path, text);
  return path;
}

function at(config: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], config);
}

const BUILT_IN_IDS = [
  'argocd-hook-finalizer-partial',
  'argocd-fast-hook-finalizer-race',
  'argocd-hook-ttl-race',
  'argocd-hook-finalizer-cache-leak',
  'argocd-native-sidecar-finalizer-update',
  'argocd-foreign-finalizer',
  'argocd-autosync-skips-hooks',
  'argocd-delete-hook-lost',
  'argocd-failed-delete-hook-loop',
  'helm-hook-delete-wait',
  'helm-hook-ttl-wait',
  'flux-helm-controller-hook-output-crash',
];

describe('defaults', () => {
  it.each([
    ['mode', 'enforce'],
    ['server.host', '0.0.0.0'],
    ['server.port', 8443],
    ['server.tls', { certFile: null, keyFile: null, reloadIntervalMs: 60_000 }],
    ['server.bodyLimitBytes', 7 * 1024 * 1024],
    ['server.keepAliveTimeoutMs', 95_000],
    ['server.shutdownDelayMs', 5_000],
    ['server.shutdownTimeoutMs', 20_000],
    ['log.level', 'info'],
    ['argocd.version', null],
    ['argocd.controllerUsernames', ['system:serviceaccount:argocd:argocd-application-controller']],
    ['argocd.trackingLabel', null],
    ['argocd.instanceVersions', {}],
    ['argocd.remote', { 'system:serviceaccount:kube-system:argocd-manager': null }],
    ['excludedNamespaces', ['kube-system']],
    [
      'rules.deletePolicy',
      {
        enabled: true,
        helm: 'before-hook-creation,hook-succeeded',
        helmTest: 'before-hook-creation',
        argocd: 'BeforeHookCreation,HookSucceeded',
      },
    ],
    ['rules.idempotentCleanup.minBackoffLimit', 3],
    ['rules.minRuntime.minRuntimeSeconds', 10],
    ['rules.minRuntime.maxRuntimeSeconds', 3600],
    ['rules.minRuntime.image', 'gcr.io/distroless/static-debian12:debug-nonroot'],
    ['rules.minRuntime.command', ['/busybox/sleep']],
    ['rules.minRuntime.runAsUser', null],
    ['rules.minRuntime.imageRunsAsNonRoot', true],
    ['rules.minRuntime.openshift', 'auto'],
    ['rules.minRuntime.requests', { cpu: '250m', memory: '512Mi' }],
    ['rules.minRuntime.limits', { cpu: '250m', memory: '512Mi' }],
    ['rules.ttlFloor.minTtlSecondsAfterFinished', 60],
    [
      'discovery',
      {
        enabled: true,
        labelSelector: 'app.kubernetes.io/component=application-controller,app.kubernetes.io/part-of=argocd',
        namespaces: ['argocd', 'openshift-gitops'],
        clusterWide: false,
        backoffInitialMs: 500,
        backoffMaxMs: 30_000,
        watchTimeoutSeconds: 300,
      },
    ],
    [
      'sweep',
      {
        profiles: ['argocd-hook'],
        minAgeSeconds: 600,
        finishedGraceSeconds: 300,
        applicationNamespaces: ['argocd', 'openshift-gitops'],
        argoWorkflowsGraceSeconds: 600,
        maxAttempts: 5,
        backoffInitialMs: 500,
        backoffMaxMs: 10_000,
      },
    ],
  ])('%s is %j', (path, value) => {
    expect(at(loadConfig(), path)).toEqual(value);
  });

  it('is DEFAULTS plus the built-in advisories, with no sources at all', () => {
    const config = loadConfig();
    const { advisories, ...rest } = config;
    expect(rest).toEqual(DEFAULTS);
    expect(advisories.map((advisory) => advisory.id)).toEqual(BUILT_IN_IDS);
  });

  it('maps every environment variable to a key that exists in the defaults', () => {
    for (const path of Object.values(ENV_KEYS)) expect(at(DEFAULTS, path), path).not.toBeUndefined();
  });
});

describe('precedence: defaults < file < environment < flags', () => {
  const file = () => yamlFile('mode: audit\nserver:\n  port: 9000\n');

  it.each<[string, () => ConfigSources, number, string]>([
    ['defaults', () => ({}), 8443, 'enforce'],
    ['the file over the defaults', () => ({ file: file() }), 9000, 'audit'],
    [
      'the environment over the file',
      () => ({ file: file(), env: { HOOKGUARD_PORT: '9100', HOOKGUARD_MODE: 'enforce' } }),
      9100,
      'enforce',
    ],
    [
      'flags over the environment',
      () => ({
        file: file(),
        env: { HOOKGUARD_PORT: '9100', HOOKGUARD_MODE: 'enforce' },
        overrides: { 'server.port': '9200', mode: 'audit' },
      }),
      9200,
      'audit',
    ],
    ['a flag given as a number', () => ({ overrides: { 'server.port': 9300 } }), 9300, 'enforce'],
    [
      'an empty environment value, which is ignored',
      () => ({ file: file(), env: { HOOKGUARD_PORT: '', HOOKGUARD_MODE: '' } }),
      9000,
      'audit',
    ],
    [
      'an unset flag, which is ignored',
      () => ({ file: file(), overrides: { 'server.port': undefined, mode: undefined } }),
      9000,
      'audit',
    ],
    [
      'environment variables hookguard does not read',
      () => ({ env: { PORT: '1', HOOKGUARD_SERVER_PORT: '2', MODE: 'audit' } }),
      8443,
      'enforce',
    ],
  ])('%s', (_name, sources, port, mode) => {
    const config = loadConfig(sources());
    expect([config.server.port, config.mode]).toEqual([port, mode]);
  });

  it.each([
    ['HOOKGUARD_HOST', '127.0.0.1', 'server.host', '127.0.0.1'],
    ['HOOKGUARD_TLS_CERT_FILE', '/certs/tls.crt', 'server.tls.certFile', '/certs/tls.crt'],
    ['HOOKGUARD_LOG_LEVEL', 'debug', 'log.level', 'debug'],
    ['HOOKGUARD_ARGOCD_VERSION', 'v2.14.8', 'argocd.version', 'v2.14.8'],
    [
      'HOOKGUARD_EXCLUDED_NAMESPACES',
      ' kube-system, argocd ,,monitoring',
      'excludedNamespaces',
      ['kube-system', 'argocd', 'monitoring'],
    ],
    ['HOOKGUARD_DISCOVERY_ENABLED', 'false', 'discovery.enabled', false],
    ['HOOKGUARD_DISCOVERY_NAMESPACES', 'argocd,team-b', 'discovery.namespaces', ['argocd', 'team-b']],
    ['HOOKGUARD_DISCOVERY_CLUSTER_WIDE', 'true', 'discovery.clusterWide', true],
  ])('%s=%j sets %s', (variable, raw, path, value) => {
    const env: Record<string, string> = { [variable]: raw };
    // certFile needs its keyFile.
    if (variable === 'HOOKGUARD_TLS_CERT_FILE') env.HOOKGUARD_TLS_KEY_FILE = '/certs/tls.key';
    expect(at(loadConfig({ env }), path)).toEqual(value);
  });

  it('merges a partial file into the defaults, key by key', () => {
    const config = loadConfig({
      file: yamlFile('rules:\n  minRuntime:\n    minRuntimeSeconds: 20\n    requests: { cpu: 5m }\n'),
    });
    expect(config.rules.minRuntime).toEqual({
      ...DEFAULTS.rules.minRuntime,
      minRuntimeSeconds: 20,
      requests: { cpu: '5m', memory: '512Mi' },
    });
    expect(config.rules.ttlFloor).toEqual(DEFAULTS.rules.ttlFloor);
  });

  it.each([
    ['null leaves the guard’s user and group unset', 'runAsUser: null', null],
    ['65534, as for a mirrored busybox', 'runAsUser: 65534', 65534],
    ['a user id', 'runAsUser: 1000680000', 1000680000],
  ])('rules.minRuntime.runAsUser: %s', (_name, line, value) => {
    expect(loadConfig({ file: yamlFile(`rules:\n  minRuntime:\n    ${line}\n`) }).rules.minRuntime.runAsUser).toBe(
      value,
    );
  });

  it.each([
    ['openshift: true', 'true'],
    ['openshift: false', 'false'],
    ["openshift: 'true'", 'true'],
    ['openshift: auto', 'auto'],
  ])('rules.minRuntime.%s: a YAML boolean is the choice of the same text', (line, value) => {
    expect(loadConfig({ file: yamlFile(`rules:\n  minRuntime:\n    ${line}\n`) }).rules.minRuntime.openshift).toBe(
      value,
    );
  });

  it.each([
    'busybox',
    'busybox:1.37.0',
    'my.registry:5000/mirror/library/busybox:1.37.0',
    `registry.example/busybox:1.37.0@sha256:${'a'.repeat(64)}`,
    `busybox@sha256:${'0123456789abcdef'.repeat(4)}`,
    'localhost/busy_box__x-y.z:v1',
    '[::1]:5000/busybox',
  ])('accepts the guard image %s', (image) => {
    expect(loadConfig({ overrides: { 'rules.minRuntime.image': image } }).rules.minRuntime.image).toBe(image);
  });

  it('reads an empty file as no settings', () => {
    const { advisories: _advisories, ...rest } = loadConfig({ file: yamlFile('# nothing here\n') });
    expect(rest).toEqual(DEFAULTS);
  });
});

describe('invalid configuration names the bad key', () => {
  const builtIn = 'argocd-fast-hook-finalizer-race';

  it.each<[string, () => ConfigSources, string, string]>([
    [
      'minRuntimeSeconds 0',
      () => ({ file: yamlFile('rules:\n  minRuntime:\n    minRuntimeSeconds: 0\n') }),
      'rules.minRuntime.minRuntimeSeconds',
      'must be an integer 1..3600, got 0',
    ],
    [
      'minRuntimeSeconds above maxRuntimeSeconds',
      () => ({ file: yamlFile('rules: { minRuntime: { minRuntimeSeconds: 90, maxRuntimeSeconds: 60 } }\n') }),
      'rules.minRuntime.minRuntimeSeconds',
      'must be an integer 1..60, got 90',
    ],
    [
      'a misspelt key',
      () => ({ file: yamlFile('rules:\n  minRuntime:\n    imag: busybox\n') }),
      'rules.minRuntime.imag',
      'unknown key',
    ],
    ['an unknown top-level key', () => ({ file: yamlFile('modes: audit\n') }), 'modes', 'unknown key'],
    ['an unknown key given as a flag', () => ({ overrides: { 'server.portt': '1' } }), 'server.portt', 'unknown key'],
    ['mode block', () => ({ file: yamlFile('mode: block\n') }), 'mode', 'must be one of enforce, audit, got "block"'],
    // Only a choice between the texts true and false reads a YAML boolean as its text.
    ['mode true', () => ({ file: yamlFile('mode: true\n') }), 'mode', 'must be a string, got boolean true'],
    [
      'mode block as a flag',
      () => ({ overrides: { mode: 'block' } }),
      'mode',
      'must be one of enforce, audit, got "block"',
    ],
    [
      'HOOKGUARD_PORT=abc',
      () => ({ env: { HOOKGUARD_PORT: 'abc' } }),
      'server.port',
      'must be a number, got string "abc"',
    ],
    [
      'port 70000',
      () => ({ file: yamlFile('server: { port: 70000 }\n') }),
      'server.port',
      'must be an integer 1..65535, got 70000',
    ],
    ['port 0', () => ({ overrides: { 'server.port': '0' } }), 'server.port', 'must be an integer 1..65535, got 0'],
    [
      'a port written as a YAML string',
      () => ({ file: yamlFile('server: { port: "8443" }\n') }),
      'server.port',
      'must be a number, got string "8443"',
    ],
    [
      'log level loud',
      () => ({ env: { HOOKGUARD_LOG_LEVEL: 'loud' } }),
      'log.level',
      'must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ],
    [
      'argocd.version latest',
      () => ({ file: yamlFile('argocd:\n  version: latest\n') }),
      'argocd.version',
      '"latest" is not a semantic version like 2.14.3',
    ],
    [
      'argocd.version as a YAML number',
      () => ({ file: yamlFile('argocd:\n  version: 2.14\n') }),
      'argocd.version',
      'must be a string, got number 2.14',
    ],
    [
      'certFile without keyFile',
      () => ({ file: yamlFile('server:\n  tls:\n    certFile: /certs/tls.crt\n') }),
      'server.tls',
      'certFile and keyFile go together: set both or neither',
    ],
    [
      'keyFile without certFile',
      () => ({ env: { HOOKGUARD_TLS_KEY_FILE: '/certs/tls.key' } }),
      'server.tls',
      'certFile and keyFile go together: set both or neither',
    ],
    [
      'a headers timeout longer than the request timeout',
      () => ({ file: yamlFile('server: { headersTimeoutMs: 40000, requestTimeoutMs: 30000 }\n') }),
      'server.headersTimeoutMs',
      'must be an integer 100..30000, got 40000',
    ],
    [
      'a shutdown delay that leaves no time to drain',
      () => ({ file: yamlFile('server: { shutdownDelayMs: 20000, shutdownTimeoutMs: 20000 }\n') }),
      'server.shutdownDelayMs',
      'must be an integer 0..19000, got 20000',
    ],
    [
      'a certificate re-read every few milliseconds',
      () => ({ file: yamlFile('server: { tls: { reloadIntervalMs: 10 } }\n') }),
      'server.tls.reloadIntervalMs',
      'must be an integer 1000..86400000, got 10',
    ],
    [
      'no connections at all',
      () => ({ file: yamlFile('server: { maxConnections: 0 }\n') }),
      'server.maxConnections',
      'must be an integer 1..1000000, got 0',
    ],
    [
      'excludedNamespaces as a string',
      () => ({ file: yamlFile('excludedNamespaces: kube-system\n') }),
      'excludedNamespaces',
      'must be a list of strings, got string "kube-system"',
    ],
    ['rules as a list', () => ({ file: yamlFile('rules: []\n') }), 'rules', 'must be a mapping, got a list'],
    [
      'instance versions as a list',
      () => ({ file: yamlFile('argocd: { instanceVersions: [openshift-gitops] }\n') }),
      'argocd.instanceVersions',
      'must be a mapping, got a list',
    ],
    [
      'an instance version that is an OpenShift GitOps release name',
      () => ({ file: yamlFile('argocd: { instanceVersions: { openshift-gitops: latest } }\n') }),
      'argocd.instanceVersions',
      '"openshift-gitops": "latest" is not a semantic version like 2.14.3',
    ],
    [
      'an instance version left empty',
      () => ({ file: yamlFile('argocd: { instanceVersions: { openshift-gitops: null } }\n') }),
      'argocd.instanceVersions',
      '"openshift-gitops" must map to a string, got null',
    ],
    [
      'an instance version for a name that is no namespace',
      () => ({ file: yamlFile('argocd: { instanceVersions: { Team_B: 2.14.8 } }\n') }),
      'argocd.instanceVersions',
      'name "Team_B" is not a namespace name (a DNS-1123 label)',
    ],
    [
      'a remote version YAML reads as a number',
      () => ({ file: yamlFile('argocd:\n  remote:\n    system:serviceaccount:kube-system:argocd-manager: 3.1\n') }),
      'argocd.remote',
      '"system:serviceaccount:kube-system:argocd-manager" must map to a string or null, got number 3.1',
    ],
    [
      'an empty guard command',
      () => ({ file: yamlFile('rules: { minRuntime: { command: [] } }\n') }),
      'rules.minRuntime.command',
      'must not be empty',
    ],
    [
      'a bad CPU quantity',
      () => ({ file: yamlFile('rules: { minRuntime: { limits: { cpu: 1 core } } }\n') }),
      'rules.minRuntime.limits.cpu',
      'must be a Kubernetes quantity above 0 like 100m or 128Mi, got "1 core"',
    ],
    [
      'a memory request of 0',
      () => ({ file: yamlFile('rules: { minRuntime: { requests: { memory: "0" } } }\n') }),
      'rules.minRuntime.requests.memory',
      'must be a Kubernetes quantity above 0 like 100m or 128Mi, got "0"',
    ],
    [
      'a CPU request above its limit',
      () => ({ file: yamlFile('rules: { minRuntime: { requests: { cpu: "0.3" }, limits: { cpu: 250m } } }\n') }),
      'rules.minRuntime.requests.cpu',
      '0.3 is above limits.cpu (250m)',
    ],
    [
      'a memory request above its limit',
      () => ({ file: yamlFile('rules: { minRuntime: { limits: { memory: 256Mi } } }\n') }),
      'rules.minRuntime.requests.memory',
      '512Mi is above limits.memory (256Mi)',
    ],
    [
      'a guard user of 0',
      () => ({ file: yamlFile('rules: { minRuntime: { runAsUser: 0 } }\n') }),
      'rules.minRuntime.runAsUser',
      'must be an integer 1..2147483647 or null, got 0',
    ],
    [
      'an image with upper case in its path',
      () => ({ overrides: { 'rules.minRuntime.image': 'Busybox:1.37.0' } }),
      'rules.minRuntime.image',
      '"Busybox:1.37.0" is not an image reference like registry.example/busybox:1.37.0@sha256:<64 hex>',
    ],
    [
      'an image with a space',
      () => ({ overrides: { 'rules.minRuntime.image': 'busybox: 1.37' } }),
      'rules.minRuntime.image',
      '"busybox: 1.37" is not an image reference like registry.example/busybox:1.37.0@sha256:<64 hex>',
    ],
    [
      'an image with a short sha256 digest',
      () => ({ overrides: { 'rules.minRuntime.image': `busybox@sha256:${'a'.repeat(40)}` } }),
      'rules.minRuntime.image',
      'a sha256 digest is 64 lowercase hex digits',
    ],
    [
      'an image digest of an unknown algorithm',
      () => ({ overrides: { 'rules.minRuntime.image': `busybox@md5:${'a'.repeat(32)}` } }),
      'rules.minRuntime.image',
      'digest algorithm "md5" is not one of sha256, sha384, sha512',
    ],
    [
      'an image that is a bare identifier',
      () => ({ overrides: { 'rules.minRuntime.image': 'f'.repeat(64) } }),
      'rules.minRuntime.image',
      'is a 64-character hex identifier, not an image name',
    ],
    [
      'an empty image',
      () => ({ overrides: { 'rules.minRuntime.image': '' } }),
      'rules.minRuntime.image',
      '"" is not an image reference like registry.example/busybox:1.37.0@sha256:<64 hex>',
    ],
    [
      'an advisory with a bad semver range',
      () => ({
        file: yamlFile(
          'advisories:\n  - id: my-race\n    summary: a race\n    affected: not a range\n    mitigatedBy: [ttl-floor]\n',
        ),
      }),
      'advisories[0].affected',
      '"not a range" is not a semver range',
    ],
    [
      'an override making a built-in range invalid',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    affected: ">=banana"\n`) }),
      'advisories[0].affected',
      '">=banana" is not a semver range',
    ],
    [
      'an advisory mitigated by an unknown rule',
      () => ({
        file: yamlFile(
          'advisories:\n  - id: my-race\n    summary: a race\n    affected: "<9.0.0"\n    mitigatedBy: [ttl-floor, no-such-rule]\n',
        ),
      }),
      'advisories[0].mitigatedBy',
      'unknown rule "no-such-rule"',
    ],
    [
      'an advisory about hooks of no phase Argo CD has',
      () => ({
        file: yamlFile(
          'advisories:\n  - id: my-race\n    summary: a race\n    affected: "<9.0.0"\n    hooks: rollback\n',
        ),
      }),
      'advisories[0].hooks',
      'must be one of sync, delete',
    ],
    [
      'an advisory about delete hooks naming a mitigation',
      () => ({
        file: yamlFile(
          'advisories:\n  - id: my-race\n    summary: a race\n    affected: "<9.0.0"\n    hooks: delete\n    mitigatedBy: [ttl-floor]\n',
        ),
      }),
      'advisories[0].mitigatedBy',
      'an advisory about delete hooks can only be warned of (warnedBy)',
    ],
    [
      'a new advisory without a summary',
      () => ({ file: yamlFile('advisories:\n  - id: my-race\n    affected: "<9.0.0"\n') }),
      'advisories[0].summary',
      'must be a non-empty string',
    ],
    [
      'an advisory without an id',
      () => ({ file: yamlFile('advisories:\n  - summary: a race\n') }),
      'advisories[0].id',
      'every advisory needs an id',
    ],
    [
      'an advisory with an unknown key',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    affects: "<3.0.0"\n`) }),
      'advisories[0].affects',
      'unknown key',
    ],
    [
      'an advisory about a tool hookguard does not know',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    tool: kustomize\n`) }),
      'advisories[0].tool',
      'must be one of argocd, helm, helm-controller',
    ],
    [
      'an advisory fixed in no version',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    fixed: soon\n`) }),
      'advisories[0].fixed',
      'must be a version',
    ],
    [
      'an advisory warned about by an unknown rule',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    warnedBy: [no-such-rule]\n`) }),
      'advisories[0].warnedBy',
      'unknown rule "no-such-rule"',
    ],
    [
      'an advisory warned about by a rule that is not a CREATE mutation',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    warnedBy: [immutable-update]\n`) }),
      'advisories[0].warnedBy',
      'unknown rule "immutable-update"',
    ],
    [
      'mitigatedBySweep that is not a boolean',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    mitigatedBySweep: yes please\n`) }),
      'advisories[0].mitigatedBySweep',
      'must be true or false',
    ],
    [
      'a checked date that is no day',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    checked: 2026-02-30\n`) }),
      'advisories[0].checked',
      'must be a date like 2026-11-23, got "2026-02-30"',
    ],
    [
      'a checked date that is not a date',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    checked: last week\n`) }),
      'advisories[0].checked',
      'must be a date like 2026-11-23, got "last week"',
    ],
    [
      'notes that are not a list',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    notes: see the issue\n`) }),
      'advisories[0].notes',
      'must be a list',
    ],
    [
      'a note with a bad range',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    notes: [{ affected: soon, text: t }]\n`) }),
      'advisories[0].notes[0].affected',
      '"soon" is not a semver range',
    ],
    [
      'a note without text',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    notes: [{ affected: ">=3.0.0" }]\n`) }),
      'advisories[0].notes[0].text',
      'must be a non-empty string',
    ],
    [
      'a note for an unknown kind of hook name',
      () => ({
        file: yamlFile(`advisories:\n  - id: ${builtIn}\n    notes: [{ affected: "*", hookName: random, text: t }]\n`),
      }),
      'advisories[0].notes[0].hookName',
      'must be one of fixed, generated',
    ],
    [
      'a note with an unknown key',
      () => ({ file: yamlFile(`advisories:\n  - id: ${builtIn}\n    notes: [{ affected: "*", text: t, when: x }]\n`) }),
      'advisories[0].notes[0].when',
      'unknown key',
    ],
    ['advisories as a mapping', () => ({ file: yamlFile('advisories:\n  id: x\n') }), 'advisories', 'must be a list'],
    [
      'HOOKGUARD_DISCOVERY_ENABLED=yes',
      () => ({ env: { HOOKGUARD_DISCOVERY_ENABLED: 'yes' } }),
      'discovery.enabled',
      'must be a boolean, got string "yes"',
    ],
    [
      'an empty discovery selector',
      () => ({ file: yamlFile('discovery: { labelSelector: " " }\n') }),
      'discovery.labelSelector',
      'must not be empty',
    ],
    [
      'discovery backoff max below its initial delay',
      () => ({ file: yamlFile('discovery: { backoffInitialMs: 1000, backoffMaxMs: 10 }\n') }),
      'discovery.backoffMaxMs',
      'must be an integer 1000..600000, got 10',
    ],
    [
      'a watch timeout of 0',
      () => ({ file: yamlFile('discovery: { watchTimeoutSeconds: 0 }\n') }),
      'discovery.watchTimeoutSeconds',
      'must be an integer 1..3600, got 0',
    ],
    [
      'a negative sweep age',
      () => ({ overrides: { 'sweep.minAgeSeconds': '-5' } }),
      'sweep.minAgeSeconds',
      'must be a number, got string "-5"',
    ],
    [
      'sweep attempts 0',
      () => ({ file: yamlFile('sweep: { maxAttempts: 0 }\n') }),
      'sweep.maxAttempts',
      'must be an integer 1..20, got 0',
    ],
  ])('%s', (_name, sources, key, problem) => {
    const error = captureError(() => loadConfig(sources()));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).key).toBe(key);
    expect((error as ConfigError).message).toBe(`invalid config: ${key}: ${problem}`);
  });

  it.each<[string, () => string, RegExp]>([
    ['a missing file', () => join(dir, 'missing.yaml'), /^invalid config: file: cannot read .*missing\.yaml: ENOENT/],
    [
      'a file that is not YAML',
      () => yamlFile('mode: [enforce\n'),
      /^invalid config: file: .*\.yaml is not valid YAML: /,
    ],
    [
      'a file holding a list',
      () => yamlFile('- mode: audit\n'),
      /^invalid config: file: .*\.yaml must hold a mapping$/,
    ],
  ])('%s names the file', (_name, path, message) => {
    const error = captureError(() => loadConfig({ file: path() }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).key).toBe('file');
    expect((error as ConfigError).message).toMatch(message);
  });
});

function captureError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, none was thrown');
}

describe('Argo CD versions the config gives', () => {
  it('reads remote identities and instance versions, and the decision context judges with them', () => {
    const config = loadConfig({
      file: yamlFile(
        [
          'argocd:',
          '  instanceVersions:',
          '    openshift-gitops: v2.14.8',
          '  remote:',
          '    system:serviceaccount:kube-system:argocd-manager: v3.1.0',
          '    arn:aws:iam::123456789012:role/argocd: null',
          '',
        ].join('\n'),
      ),
    });
    expect(config.argocd.instanceVersions).toEqual({ 'openshift-gitops': 'v2.14.8' });
    const context = decisionContext(config);
    expect(context.remoteArgo).toEqual([
      { username: 'system:serviceaccount:kube-system:argocd-manager', version: '3.1.0' },
      { username: 'arn:aws:iam::123456789012:role/argocd', version: undefined },
    ]);
    expect(context.config.hookDetection.argocdControllerUsernames).toEqual([
      'system:serviceaccount:argocd:argocd-application-controller',
      'system:serviceaccount:kube-system:argocd-manager',
      'arn:aws:iam::123456789012:role/argocd',
    ]);
  });

  it('names no remote identity when the config empties the mapping', () => {
    const context = decisionContext(loadConfig({ file: yamlFile('argocd: { remote: {} }\n') }));
    expect(context.remoteArgo).toEqual([]);
    expect(context.config.hookDetection.argocdControllerUsernames).toEqual([
      'system:serviceaccount:argocd:argocd-application-controller',
    ]);
  });
});

describe('the loaded config', () => {
  function unfrozen(value: unknown, path: string, found: string[]): string[] {
    if (typeof value === 'object' && value !== null) {
      if (!Object.isFrozen(value)) found.push(path || '(root)');
      for (const [key, child] of Object.entries(value)) unfrozen(child, path ? `${path}.${key}` : key, found);
    }
    return found;
  }

  it('is deeply frozen, advisories included', () => {
    const config = loadConfig({
      file: yamlFile(
        'advisories:\n  - id: mine\n    summary: s\n    affected: "<9"\n    references: [https://example.com]\n',
      ),
    });
    expect(unfrozen(config, '', [])).toEqual([]);
    const mutable = config as unknown as {
      mode: string;
      server: { port: number };
      excludedNamespaces: string[];
      advisories: Array<{ references: string[] }>;
    };
    expect(() => (mutable.mode = 'audit')).toThrow(TypeError);
    expect(() => (mutable.server.port = 1)).toThrow(TypeError);
    expect(() => mutable.excludedNamespaces.push('apps')).toThrow(TypeError);
    expect(() => mutable.advisories[3]!.references.push('x')).toThrow(TypeError);
    expect(config.mode).toBe('enforce');
    // Freezing the result must not freeze the exported defaults it was built from.
    expect(Object.isFrozen(DEFAULTS.excludedNamespaces)).toBe(false);
    expect(Object.isFrozen(DEFAULTS.rules.minRuntime)).toBe(false);
  });
});

describe('advisories from the config', () => {
  const builtIns = loadConfig().advisories;
  const builtIn = (id: string) => builtIns.find((advisory) => advisory.id === id)!;

  it('overrides a built-in by id, keeping its other fields and its place', () => {
    const config = loadConfig({
      file: yamlFile(
        'advisories:\n  - id: argocd-fast-hook-finalizer-race\n    affected: ">=2.14.0 <3.5.0"\n    fixed: 3.5.0\n',
      ),
    });
    expect(config.advisories.map((advisory) => advisory.id)).toEqual(BUILT_IN_IDS);
    expect(config.advisories[1]).toEqual({
      ...builtIn('argocd-fast-hook-finalizer-race'),
      affected: '>=2.14.0 <3.5.0',
      fixed: '3.5.0',
    });
    expect(config.advisories[0]).toEqual(builtIn('argocd-hook-finalizer-partial'));
  });

  it('adds a new advisory after the built-ins, with empty lists for what it leaves out', () => {
    const config = loadConfig({
      file: yamlFile(
        'advisories:\n  - id: my-race\n    summary: our own race\n    affected: ">=3.4.0 <3.4.2"\n    mitigatedBy: [ttl-floor]\n',
      ),
    });
    expect(config.advisories.map((advisory) => advisory.id)).toEqual([...BUILT_IN_IDS, 'my-race']);
    expect(config.advisories.at(-1)).toEqual({
      id: 'my-race',
      summary: 'our own race',
      affected: '>=3.4.0 <3.4.2',
      references: [],
      mitigatedBy: ['ttl-floor'],
      mitigatedBySweep: false,
      warnedBy: [],
      notes: [],
    });
  });

  it('ships each built-in advisory with its sources and the day they were checked', () => {
    for (const advisory of builtIns) {
      expect(advisory.checked, advisory.id).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(advisory.references.length, advisory.id).toBeGreaterThan(0);
      expect(
        advisory.references.every((reference) => reference.startsWith('https://github.com/')),
        advisory.id,
      ).toBe(true);
    }
  });

  it('reads a note, the sweep and warning rules from the config', () => {
    const config = loadConfig({
      file: yamlFile(
        'advisories:\n  - id: my-leak\n    summary: our fork leaks finalizers\n    affected: ">=3.2.0"\n' +
          '    checked: 2026-11-01\n    mitigatedBySweep: true\n    warnedBy: [native-sidecar]\n' +
          '    notes:\n      - { affected: ">=3.2.5", hookName: generated, text: worse with generateName }\n',
      ),
    });
    expect(config.advisories.at(-1)).toEqual({
      id: 'my-leak',
      summary: 'our fork leaks finalizers',
      affected: '>=3.2.0',
      checked: '2026-11-01',
      references: [],
      mitigatedBy: [],
      mitigatedBySweep: true,
      warnedBy: ['native-sidecar'],
      notes: [{ affected: '>=3.2.5', hookName: 'generated', text: 'worse with generateName' }],
    });
  });

  it('removes a built-in marked disabled: true', () => {
    const config = loadConfig({ file: yamlFile('advisories:\n  - id: argocd-hook-ttl-race\n    disabled: true\n') });
    expect(config.advisories.map((advisory) => advisory.id)).toEqual(
      BUILT_IN_IDS.filter((id) => id !== 'argocd-hook-ttl-race'),
    );
  });

  it('changes decisions: an override extending the affected range denies on a version the built-in does not cover', () => {
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: 'fast',
        namespace: 'apps',
        annotations: { 'argocd.argoproj.io/hook': 'PreSync', 'hookguard.io/skip': 'min-runtime' },
      },
      spec: {
        template: {
          spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'alpine:3.20', command: ['true'] }] },
        },
      },
    };
    const request = {
      uid: 'u',
      operation: 'CREATE',
      namespace: 'apps',
      userInfo: { username: 'someone' },
      object: job,
    };
    const stock = loadConfig({ overrides: { 'argocd.version': '3.4.1' } });
    expect(decide(request, 'validate', decisionContext(stock)).allowed).toBe(true);
    const extended = loadConfig({
      file: yamlFile('advisories:\n  - id: argocd-fast-hook-finalizer-race\n    affected: ">=2.14.0 <3.5.0"\n'),
      overrides: { 'argocd.version': '3.4.1' },
    });
    const decision = decide(request, 'validate', decisionContext(extended));
    expect(decision.allowed).toBe(false);
    expect(decision.denial).toContain('Job apps/fast races with Argo CD 3.4.1 (argocd-fast-hook-finalizer-race: ');
  });
});
