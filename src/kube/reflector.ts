// Keeps an up-to-date copy of the objects behind one list+watch, the way client-go's reflector does:
// list, then watch from the list's resourceVersion (with bookmarks); re-list on 410 Gone; reconnect with
// backoff and jitter when the watch or the list fails; restart a watch that has gone silent.
import { setTimeout as sleep } from 'node:timers/promises';
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeObject } from '../core/types.js';
import { backoffDelayMs, type BackoffSettings } from './backoff.js';

export interface ListResult {
  items: KubeObject[];
  resourceVersion: string;
}

export interface ReflectorTarget {
  /** For the log, e.g. "deployments in all namespaces". */
  description: string;
  /** The collection's path, e.g. /apis/apps/v1/deployments; the watch goes to the same path. */
  path: string;
  labelSelector: string;
  list(): Promise<ListResult>;
  /** What the server goes on with while the watch is lost, for the log (default: the last known Argo CD versions). */
  whileLost?: string;
}

export interface ReflectorSettings {
  backoff: BackoffSettings;
  /** Asked of the API server for each watch; a watch silent for longer than this plus stallGraceMs is restarted. */
  watchTimeoutSeconds: number;
  stallGraceMs?: number;
}

/** ReflectorSettings from the config's discovery.* keys, which every watch of serve shares. */
export function reflectorSettingsOf(settings: {
  backoffInitialMs: number;
  backoffMaxMs: number;
  watchTimeoutSeconds: number;
  stallGraceMs?: number;
}): ReflectorSettings {
  return {
    backoff: { initialMs: settings.backoffInitialMs, maxMs: settings.backoffMaxMs },
    watchTimeoutSeconds: settings.watchTimeoutSeconds,
    ...(settings.stallGraceMs !== undefined ? { stallGraceMs: settings.stallGraceMs } : {}),
  };
}

/** A watch that ended without an error: closed by the server (its timeout) or by us. */
type WatchEnd = { kind: 'closed'; events: number; durationMs: number } | { kind: 'gone' };

class WatchError extends Error {
  override name = 'WatchError';
}

const STALL_GRACE_MS = 30_000;
/** A list the API server has not answered by then is abandoned and retried with backoff. */
const LIST_TIMEOUT_MS = 60_000;

function keyOf(object: KubeObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

function statusCodeOf(error: unknown): number | undefined {
  // The watch reports a normal end as done(null).
  if (typeof error !== 'object' || error === null) return undefined;
  const candidate = error as { statusCode?: unknown; code?: unknown };
  if (typeof candidate.statusCode === 'number') return candidate.statusCode;
  return typeof candidate.code === 'number' ? candidate.code : undefined;
}

export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = statusCodeOf(error);
  // ApiException messages carry the whole response; the first line says what happened.
  const firstLine = error.message.split('\n', 1)[0] ?? error.message;
  return code !== undefined && !firstLine.includes(String(code)) ? `HTTP ${code}: ${firstLine}` : firstLine;
}

export class Reflector {
  private objects = new Map<string, KubeObject>();
  private resourceVersion = '';
  private readonly stopping = new AbortController();
  /** Ends the open watch (or the one still waiting for its answer), for stop(). */
  private cancelWatch: (() => void) | undefined;
  private running: Promise<void> | undefined;
  /** True once the first list has completed; it stays true: the copy stays usable while the API server is away. */
  synced = false;
  /** True while a watch is open. */
  connected = false;
  lastError: string | undefined;
  private lost = false;

  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly target: ReflectorTarget,
    private readonly settings: ReflectorSettings,
    private readonly logger: Logger,
    /** Called with every object after each change. */
    private readonly onChange: (objects: readonly KubeObject[]) => void,
  ) {}

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    this.cancelWatch?.();
    await this.running;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.stopped) {
      try {
        if (this.resourceVersion === '') await this.relist();
        const end = await this.watchOnce();
        if (end.kind === 'gone') {
          this.logger.info({ target: this.target.description }, 'watch resourceVersion expired (410 Gone): re-listing');
          this.resourceVersion = '';
          continue;
        }
        // The API server ends every watch at its timeout, so an end is normal; but one that comes early and
        // empty (no event, not even a bookmark) is a failure to back off from, not to retry in a tight loop.
        if (end.events === 0 && end.durationMs < this.settings.watchTimeoutSeconds * 500)
          throw new WatchError('watch closed by the server early, before any event');
        attempt = 0;
      } catch (error) {
        if (this.stopped) break;
        this.connected = false;
        const delayMs = backoffDelayMs(attempt, this.settings.backoff);
        attempt += 1;
        this.lastError = describeError(error);
        if (!this.lost) {
          this.lost = true;
          this.logger.warn(
            { target: this.target.description, error: this.lastError, retryInMs: delayMs },
            `lost the watch on the API server; ${this.target.whileLost ?? 'using the last known Argo CD versions'}`,
          );
        } else {
          this.logger.debug(
            { target: this.target.description, error: this.lastError, retryInMs: delayMs, attempt },
            'API server still unreachable',
          );
        }
        await sleep(delayMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
    this.connected = false;
  }

  private regained(): void {
    if (this.lost) {
      this.lost = false;
      this.lastError = undefined;
      this.logger.info({ target: this.target.description }, 'regained the watch on the API server');
    }
  }

  private async relist(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new WatchError(`list gave no answer within ${LIST_TIMEOUT_MS / 1000}s`)),
        LIST_TIMEOUT_MS,
      );
    });
    const list = await Promise.race([this.target.list(), timeout]).finally(() => clearTimeout(timer));
    // A list answered after stop(): its caller has moved on (a leader's term ended), and hears nothing more.
    if (this.stopped) return;
    this.objects = new Map(list.items.map((item) => [keyOf(item), item]));
    this.resourceVersion = list.resourceVersion;
    this.regained();
    if (!this.synced)
      this.logger.info({ target: this.target.description, objects: list.items.length }, 'discovery listed');
    this.synced = true;
    this.onChange([...this.objects.values()]);
  }

  /**
   * One watch from the current resourceVersion, until it ends. It settles exactly once; a watch it has given up
   * on (silent, or stopped before the API server even answered) is aborted whenever it does answer, and its
   * late events are ignored.
   */
  private watchOnce(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve, reject) => {
      const started = Date.now();
      let events = 0;
      let gone = false;
      let failure: Error | undefined;
      let settled = false;
      let controller: AbortController | undefined;
      let watchdog: NodeJS.Timeout | undefined;
      const settle = (outcome: { end: WatchEnd } | { error: Error }) => {
        if (settled) return;
        settled = true;
        clearTimeout(watchdog);
        this.cancelWatch = undefined;
        this.connected = false;
        controller?.abort();
        if ('end' in outcome) resolve(outcome.end);
        else reject(outcome.error);
      };
      const armWatchdog = () => {
        clearTimeout(watchdog);
        const silentMs = this.settings.watchTimeoutSeconds * 1000 + (this.settings.stallGraceMs ?? STALL_GRACE_MS);
        watchdog = setTimeout(
          () => settle({ error: new WatchError(`watch silent for over ${silentMs} ms: restarting it`) }),
          silentMs,
        );
        watchdog.unref();
      };
      this.cancelWatch = () => settle({ end: { kind: 'closed', events, durationMs: Date.now() - started } });
      const onEvent = (type: string, object: unknown) => {
        if (settled || this.stopped) return;
        armWatchdog();
        events += 1;
        const kube = object as KubeObject;
        if (type === 'ERROR') {
          const status = object as { code?: number; message?: string };
          if (status.code === 410) gone = true;
          else failure = new WatchError(`watch error event: ${status.code ?? '?'} ${status.message ?? ''}`.trim());
          controller?.abort();
          return;
        }
        const resourceVersion = kube?.metadata?.resourceVersion;
        if (typeof resourceVersion === 'string' && resourceVersion !== '') this.resourceVersion = resourceVersion;
        if (type === 'BOOKMARK') return;
        if (type === 'ADDED' || type === 'MODIFIED') this.objects.set(keyOf(kube), kube);
        else if (type === 'DELETED') this.objects.delete(keyOf(kube));
        else return;
        this.onChange([...this.objects.values()]);
      };
      const onDone = (error: unknown) => {
        if (gone || statusCodeOf(error) === 410) settle({ end: { kind: 'gone' } });
        else if (failure) settle({ error: failure });
        else if (error && !this.stopped) settle({ error: error as Error });
        else settle({ end: { kind: 'closed', events, durationMs: Date.now() - started } });
      };
      armWatchdog();
      const query = {
        labelSelector: this.target.labelSelector,
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: this.settings.watchTimeoutSeconds,
      };
      new Watch(this.kubeConfig).watch(this.target.path, query, onEvent, onDone).then(
        (opened) => {
          controller = opened;
          if (settled || this.stopped || gone || failure) {
            opened.abort();
            return;
          }
          if (!opened.signal.aborted) {
            this.connected = true;
            this.regained();
          }
        },
        (error: unknown) => settle({ error: error as Error }),
      );
    });
  }
}
