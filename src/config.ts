// The only module that reads process.env (through the `env` argument main passes in) or the config file.
// Config is loaded once, validated against the shape of the defaults, and frozen.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { NO_INSTANCES } from './core/argocd-instances.js';
import { isValidRange, normalizeArgoVersion } from './core/argocd-version.js';
import type { DecisionContext } from './core/context.js';
import { isRecord } from './core/objects.js';
import type { RuleSettings } from './core/rule.js';
import type { Advisory, Mode } from './core/types.js';
import { ConfigError } from './errors.js';
import { builtInRules } from './rules/index.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  mode: Mode;
  server: {
    host: string;
    port: number;
    tls: { certFile: string | null; keyFile: string | null; reloadIntervalMs: number };
    bodyLimitBytes: number;
    tlsHandshakeTimeoutMs: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxHeaderSizeBytes: number;
    maxConnections: number;
    shutdownDelayMs: number;
    shutdownTimeoutMs: number;
  };
  log: { level: LogLevel };
  argocd: {
    /** Set it to pin the version; null means unknown (mutations only, no denials). */
    version: string | null;
    controllerUsernames: string[];
    trackingLabel: string | null;
  };
  excludedNamespaces: string[];
  rules: RuleSettings;
  /** Finding the Argo CD version of each instance in the cluster (unused while argocd.version is set). */
  discovery: {
    enabled: boolean;
    labelSelector: string;
    /** Empty: the whole cluster. */
    namespaces: string[];
    backoffInitialMs: number;
    backoffMaxMs: number;
    watchTimeoutSeconds: number;
  };
  /** `hookguard sweep`: hook finalizers nothing will remove. */
  sweep: {
    minAgeSeconds: number;
    maxAttempts: number;
    backoffInitialMs: number;
    backoffMaxMs: number;
  };
  /** Built-in advisories merged with the config's additions and overrides. */
  advisories: Advisory[];
}

// Everything but `advisories`, which has a shape of its own and is checked separately.
type Shape = Omit<Config, 'advisories'>;

export const DEFAULTS: Shape = {
  mode: 'enforce',
  server: {
    host: '0.0.0.0',
    port: 8443,
    // Files are watched; this periodic re-read is the fallback for file systems whose events get lost.
    tls: { certFile: null, keyFile: null, reloadIntervalMs: 60_000 },
    // controller-runtime's limit: two 3 MB objects plus the review envelope.
    bodyLimitBytes: 7 * 1024 * 1024,
    // The API server sends a whole request at once; these only cut off slow or stuck clients (README: limits).
    tlsHandshakeTimeoutMs: 5_000,
    headersTimeoutMs: 5_000,
    // The largest webhook timeoutSeconds the API server allows is 30: later than that nobody waits for the answer.
    requestTimeoutMs: 30_000,
    // Longer than the 90 s idle timeout of the API server's client, so the client closes an idle connection
    // first and never sends a request into one we are closing.
    keepAliveTimeoutMs: 95_000,
    maxHeaderSizeBytes: 16 * 1024,
    maxConnections: 1_000,
    // After SIGTERM: stay ready-but-failing this long so endpoints drop us before we stop accepting.
    shutdownDelayMs: 5_000,
    // From SIGTERM to exit at most, well inside Kubernetes' default 30 s grace period.
    shutdownTimeoutMs: 20_000,
  },
  log: { level: 'info' },
  argocd: {
    version: null,
    controllerUsernames: ['system:serviceaccount:argocd:argocd-application-controller'],
    trackingLabel: null,
  },
  excludedNamespaces: ['kube-system'],
  rules: {
    deletePolicy: {
      helm: 'before-hook-creation,hook-succeeded',
      helmTest: 'before-hook-creation',
      argocd: 'BeforeHookCreation,HookSucceeded',
    },
    idempotentCleanup: {
      // Images whose entrypoint is kubectl, so an args-only container runs `kubectl <args>`.
      kubectlImages: [
        'bitnami/kubectl',
        'registry.k8s.io/kubectl',
        'rancher/kubectl',
        'lachlanevenson/k8s-kubectl',
        'openpolicyagent/gatekeeper-crds',
      ],
      minBackoffLimit: 3,
    },
    minRuntime: {
      minRuntimeSeconds: 10,
      maxRuntimeSeconds: 3600,
      image: 'busybox:1.37.0',
      command: ['sleep'],
      runAsUser: 65534,
      requests: { cpu: '10m', memory: '16Mi' },
      limits: { cpu: '100m', memory: '32Mi' },
    },
    ttlFloor: { minTtlSecondsAfterFinished: 60 },
  },
  discovery: {
    enabled: true,
    labelSelector: 'app.kubernetes.io/name=argocd-application-controller',
    namespaces: [],
    backoffInitialMs: 500,
    backoffMaxMs: 30_000,
    // The API server ends every watch after at most this; the reflector then resumes it.
    watchTimeoutSeconds: 300,
  },
  sweep: {
    minAgeSeconds: 600,
    maxAttempts: 5,
    backoffInitialMs: 500,
    backoffMaxMs: 10_000,
  },
};

/** Environment variables and the config key each overrides. */
export const ENV_KEYS: Readonly<Record<string, string>> = {
  HOOKGUARD_MODE: 'mode',
  HOOKGUARD_HOST: 'server.host',
  HOOKGUARD_PORT: 'server.port',
  HOOKGUARD_TLS_CERT_FILE: 'server.tls.certFile',
  HOOKGUARD_TLS_KEY_FILE: 'server.tls.keyFile',
  HOOKGUARD_LOG_LEVEL: 'log.level',
  HOOKGUARD_ARGOCD_VERSION: 'argocd.version',
  HOOKGUARD_EXCLUDED_NAMESPACES: 'excludedNamespaces',
  HOOKGUARD_DISCOVERY_ENABLED: 'discovery.enabled',
  HOOKGUARD_DISCOVERY_NAMESPACES: 'discovery.namespaces',
};

type Plain = Record<string, unknown>;

/** Overlays `input` on `defaults`, keeping every value's type as the defaults have it; unknown keys are errors. */
function overlay(defaults: unknown, input: unknown, key: string): unknown {
  if (input === undefined) return defaults;
  if (defaults === null) {
    if (input === null || typeof input === 'string') return input;
    throw new ConfigError(key, `must be a string, got ${describe(input)}`);
  }
  if (Array.isArray(defaults)) {
    if (!Array.isArray(input) || !input.every((item) => typeof item === 'string')) {
      throw new ConfigError(key, `must be a list of strings, got ${describe(input)}`);
    }
    return input;
  }
  if (isRecord(defaults)) {
    if (!isRecord(input)) throw new ConfigError(key, `must be a mapping, got ${describe(input)}`);
    const unknown = Object.keys(input).find((name) => !(name in defaults));
    if (unknown !== undefined) throw new ConfigError(key ? `${key}.${unknown}` : unknown, 'unknown key');
    return Object.fromEntries(
      Object.entries(defaults).map(([name, value]) => [
        name,
        overlay(value, input[name], key ? `${key}.${name}` : name),
      ]),
    );
  }
  if (typeof input !== typeof defaults)
    throw new ConfigError(key, `must be a ${typeof defaults}, got ${describe(input)}`);
  return input;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a mapping' : `${typeof value} ${JSON.stringify(value)}`;
}

function requireInteger(value: number, key: string, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new ConfigError(key, `must be an integer ${min}..${max}, got ${value}`);
}

function requireOneOf<T extends string>(value: string, key: string, allowed: readonly T[]): void {
  if (!allowed.includes(value as T)) throw new ConfigError(key, `must be one of ${allowed.join(', ')}, got "${value}"`);
}

function checkServerLimits(server: Shape['server']): void {
  requireInteger(server.tls.reloadIntervalMs, 'server.tls.reloadIntervalMs', 1_000, 86_400_000);
  requireInteger(server.tlsHandshakeTimeoutMs, 'server.tlsHandshakeTimeoutMs', 100, 120_000);
  requireInteger(server.requestTimeoutMs, 'server.requestTimeoutMs', 100, 600_000);
  // Node refuses a headers timeout longer than the request timeout.
  requireInteger(server.headersTimeoutMs, 'server.headersTimeoutMs', 100, server.requestTimeoutMs);
  requireInteger(server.keepAliveTimeoutMs, 'server.keepAliveTimeoutMs', 1_000, 3_600_000);
  requireInteger(server.maxHeaderSizeBytes, 'server.maxHeaderSizeBytes', 1024, 1024 * 1024);
  requireInteger(server.maxConnections, 'server.maxConnections', 1, 1_000_000);
  requireInteger(server.shutdownTimeoutMs, 'server.shutdownTimeoutMs', 1_000, 600_000);
  // The delay is part of the bound, and draining needs some of it too.
  requireInteger(server.shutdownDelayMs, 'server.shutdownDelayMs', 0, server.shutdownTimeoutMs - 1_000);
}

const QUANTITY = /^\d+(\.\d+)?(m|Ki|Mi|Gi|k|M|G)?$/;

function checkRanges(config: Shape): void {
  requireOneOf(config.mode, 'mode', ['enforce', 'audit']);
  requireOneOf(config.log.level, 'log.level', LOG_LEVELS);
  requireInteger(config.server.port, 'server.port', 1, 65535);
  requireInteger(config.server.bodyLimitBytes, 'server.bodyLimitBytes', 1024, 64 * 1024 * 1024);
  checkServerLimits(config.server);
  if ((config.server.tls.certFile === null) !== (config.server.tls.keyFile === null)) {
    throw new ConfigError('server.tls', 'certFile and keyFile go together: set both or neither');
  }
  if (config.argocd.version !== null && normalizeArgoVersion(config.argocd.version) === undefined) {
    throw new ConfigError('argocd.version', `"${config.argocd.version}" is not a semantic version like 2.14.3`);
  }
  const { rules } = config;
  requireInteger(rules.idempotentCleanup.minBackoffLimit, 'rules.idempotentCleanup.minBackoffLimit', 0, 100);
  requireInteger(rules.minRuntime.maxRuntimeSeconds, 'rules.minRuntime.maxRuntimeSeconds', 1, 86400);
  requireInteger(
    rules.minRuntime.minRuntimeSeconds,
    'rules.minRuntime.minRuntimeSeconds',
    1,
    rules.minRuntime.maxRuntimeSeconds,
  );
  requireInteger(rules.minRuntime.runAsUser, 'rules.minRuntime.runAsUser', 1, 2 ** 31 - 1);
  requireInteger(rules.ttlFloor.minTtlSecondsAfterFinished, 'rules.ttlFloor.minTtlSecondsAfterFinished', 0, 86400 * 7);
  const { discovery, sweep } = config;
  if (discovery.labelSelector.trim() === '') throw new ConfigError('discovery.labelSelector', 'must not be empty');
  requireInteger(discovery.backoffInitialMs, 'discovery.backoffInitialMs', 1, 60_000);
  requireInteger(discovery.backoffMaxMs, 'discovery.backoffMaxMs', discovery.backoffInitialMs, 600_000);
  requireInteger(discovery.watchTimeoutSeconds, 'discovery.watchTimeoutSeconds', 1, 3600);
  requireInteger(sweep.minAgeSeconds, 'sweep.minAgeSeconds', 0, 86400 * 30);
  requireInteger(sweep.maxAttempts, 'sweep.maxAttempts', 1, 20);
  requireInteger(sweep.backoffInitialMs, 'sweep.backoffInitialMs', 1, 60_000);
  requireInteger(sweep.backoffMaxMs, 'sweep.backoffMaxMs', sweep.backoffInitialMs, 600_000);
  if (rules.minRuntime.image.trim() === '') throw new ConfigError('rules.minRuntime.image', 'must not be empty');
  if (rules.minRuntime.command.length === 0) throw new ConfigError('rules.minRuntime.command', 'must not be empty');
  for (const part of ['requests', 'limits'] as const) {
    for (const resource of ['cpu', 'memory'] as const) {
      const key = `rules.minRuntime.${part}.${resource}`;
      if (!QUANTITY.test(rules.minRuntime[part][resource]))
        throw new ConfigError(key, 'must be a Kubernetes quantity like 10m or 16Mi');
    }
  }
}

const ADVISORY_KEYS = ['id', 'summary', 'affected', 'fixed', 'references', 'mitigatedBy', 'disabled'];

/** Built-in advisories with the config's entries applied: same id overrides the given fields, new ids are added. */
function mergeAdvisories(builtIn: readonly Advisory[], entries: unknown, key = 'advisories'): Advisory[] {
  if (entries === undefined) return [...builtIn];
  if (!Array.isArray(entries)) throw new ConfigError(key, 'must be a list');
  const merged = new Map(builtIn.map((advisory) => [advisory.id, advisory]));
  entries.forEach((entry, index) => {
    const at = `${key}[${index}]`;
    if (!isRecord(entry) || typeof entry.id !== 'string' || entry.id === '')
      throw new ConfigError(`${at}.id`, 'every advisory needs an id');
    const unknown = Object.keys(entry).find((name) => !ADVISORY_KEYS.includes(name));
    if (unknown !== undefined) throw new ConfigError(`${at}.${unknown}`, 'unknown key');
    if (entry.disabled === true) {
      merged.delete(entry.id);
      return;
    }
    const { disabled: _disabled, ...fields } = entry;
    merged.set(entry.id, validateAdvisory({ ...merged.get(entry.id), ...fields }, at));
  });
  return [...merged.values()];
}

/** A YAML scalar as text (`fixed: 2.14` parses as a number); anything else as JSON, which no check accepts. */
function scalarText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : JSON.stringify(value);
}

function validateAdvisory(candidate: Plain, at: string): Advisory {
  for (const name of ['id', 'summary', 'affected'] as const) {
    if (typeof candidate[name] !== 'string' || candidate[name] === '')
      throw new ConfigError(`${at}.${name}`, 'must be a non-empty string');
  }
  if (!isValidRange(candidate.affected as string))
    throw new ConfigError(`${at}.affected`, `"${String(candidate.affected)}" is not a semver range`);
  if (candidate.fixed !== undefined && normalizeArgoVersion(scalarText(candidate.fixed)) === undefined) {
    throw new ConfigError(`${at}.fixed`, 'must be a version');
  }
  for (const name of ['references', 'mitigatedBy'] as const) {
    const list = candidate[name] ?? [];
    if (!Array.isArray(list) || !list.every((item) => typeof item === 'string'))
      throw new ConfigError(`${at}.${name}`, 'must be a list of strings');
  }
  const mitigatedBy = (candidate.mitigatedBy ?? []) as string[];
  const unknownRule = mitigatedBy.find((id) => !builtInRules.mitigatingIds.has(id));
  if (unknownRule !== undefined) throw new ConfigError(`${at}.mitigatedBy`, `unknown rule "${unknownRule}"`);
  return {
    id: candidate.id as string,
    summary: candidate.summary as string,
    affected: candidate.affected as string,
    ...(candidate.fixed !== undefined ? { fixed: scalarText(candidate.fixed) } : {}),
    references: (candidate.references ?? []) as string[],
    mitigatedBy,
  };
}

let builtInAdvisories: readonly Advisory[] | undefined;

/** The advisories shipped with the package (data/advisories.yaml). */
function loadBuiltInAdvisories(): readonly Advisory[] {
  builtInAdvisories ??= mergeAdvisories(
    [],
    parse(readFileSync(new URL('../data/advisories.yaml', import.meta.url), 'utf8')),
    'data/advisories.yaml',
  );
  return builtInAdvisories;
}

function setPath(target: Plain, path: string, value: unknown): void {
  const keys = path.split('.');
  const last = keys.pop() as string;
  let node = target;
  for (const key of keys) {
    if (!isRecord(node[key])) node[key] = {};
    node = node[key] as Plain;
  }
  node[last] = value;
}

function coerceLike(defaultsPath: string, raw: string): unknown {
  const sample = defaultsPath
    .split('.')
    .reduce<unknown>((node, key) => (isRecord(node) ? node[key] : undefined), DEFAULTS);
  if (typeof sample === 'number') return /^\d+$/.test(raw) ? Number(raw) : raw;
  if (typeof sample === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw;
  if (Array.isArray(sample))
    return raw
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean);
  return raw;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

export interface ConfigSources {
  /** Path of the YAML config file, if any. */
  file?: string;
  /** The process environment; only HOOKGUARD_* keys are read. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Command-line flags, as config paths ("server.port") to values; they win over everything. */
  overrides?: Readonly<Record<string, unknown>>;
}

/** Defaults, then the file, then the environment, then flags; validated and frozen. Throws ConfigError. */
export function loadConfig(sources: ConfigSources = {}): Readonly<Config> {
  let fromFile: unknown = {};
  if (sources.file !== undefined) {
    let text: string;
    try {
      text = readFileSync(sources.file, 'utf8');
    } catch (error) {
      throw new ConfigError('file', `cannot read ${sources.file}: ${(error as Error).message}`);
    }
    try {
      fromFile = parse(text) ?? {};
    } catch (error) {
      throw new ConfigError('file', `${sources.file} is not valid YAML: ${(error as Error).message}`);
    }
    if (!isRecord(fromFile)) throw new ConfigError('file', `${sources.file} must hold a mapping`);
  }
  const input = structuredClone(fromFile) as Plain;
  const { advisories, ...settings } = input;
  for (const [variable, path] of Object.entries(ENV_KEYS)) {
    const raw = sources.env?.[variable];
    if (raw !== undefined && raw !== '') setPath(settings, path, coerceLike(path, raw));
  }
  for (const [path, value] of Object.entries(sources.overrides ?? {})) {
    if (value !== undefined) setPath(settings, path, coerceLike(path, scalarText(value)));
  }
  // A copy, so freezing the result never freezes the exported defaults.
  const shape = overlay(structuredClone(DEFAULTS), settings, '') as Shape;
  checkRanges(shape);
  return deepFreeze({ ...shape, advisories: mergeAdvisories(loadBuiltInAdvisories(), advisories) });
}

/**
 * What the pure core needs from the config. `argocdVersion` pins the version (it defaults to `argocd.version`);
 * discovered instances are added per snapshot with `withInstances`.
 */
export function decisionContext(
  config: Readonly<Config>,
  argocdVersion = config.argocd.version ?? undefined,
): DecisionContext {
  return {
    config: {
      mode: config.mode,
      excludedNamespaces: config.excludedNamespaces,
      hookDetection: {
        argocdControllerUsernames: config.argocd.controllerUsernames,
        ...(config.argocd.trackingLabel ? { argocdTrackingLabel: config.argocd.trackingLabel } : {}),
      },
      rules: config.rules,
    },
    ruleSet: builtInRules,
    advisories: config.advisories,
    pinnedArgocdVersion: argocdVersion,
    argocdInstances: NO_INSTANCES,
  };
}
