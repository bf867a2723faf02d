// Graceful shutdown for a webhook: the API server must stop calling us before we stop answering, and a request that
// reached us is always answered (a dropped one would let a hook through unguarded, as failurePolicy is Ignore).
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

/** Shared by the app and the signal handler: once shutting down, /readyz fails and answers close their connection. */
export class Lifecycle {
  #shuttingDown = false;

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  beginShutdown(): void {
    this.#shuttingDown = true;
  }
}

export interface ShutdownSettings {
  shutdownDelayMs: number;
  shutdownTimeoutMs: number;
}

/**
 * What a signal's shutdown waits for. SIGTERM is the kubelet's: the pod keeps serving for shutdownDelayMs while the
 * endpoints controller drops it. SIGINT (Ctrl-C) is someone at a terminal, whom no endpoint routes to: at once.
 */
export function shutdownSettings(signal: string, server: ShutdownSettings): ShutdownSettings {
  return {
    shutdownDelayMs: signal === 'SIGINT' ? 0 : server.shutdownDelayMs,
    shutdownTimeoutMs: server.shutdownTimeoutMs,
  };
}

/** The log line that says what this shutdown will do, with the delay it will actually wait. */
export function shutdownLine(signal: string, settings: ShutdownSettings): string {
  const bound = `exit within ${settings.shutdownTimeoutMs} ms`;
  if (settings.shutdownDelayMs === 0)
    return `shutting down at once (${signal}): finishing in-flight requests, no new connections; ${bound}`;
  return `shutting down (${signal}): /readyz fails, requests still served for ${settings.shutdownDelayMs} ms (server.shutdownDelayMs), then finishing in-flight requests; ${bound}`;
}

/** `drained`: every request was answered; `forced`: connections were still open at the deadline and were cut. */
export type ShutdownResult = 'drained' | 'forced';

function delay(ms: number): { done: Promise<void>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/**
 * 1. Readiness fails at once, and every answer from now on says `Connection: close`, so the API server's pooled
 *    connections move to the other replicas.
 * 2. Keep serving for `shutdownDelayMs` while the endpoints controller and kube-proxy drop this pod.
 * 3. Stop accepting, close idle keep-alive connections, let in-flight requests finish.
 * 4. At `shutdownTimeoutMs` after the start, cut whatever is still open: the process always exits in time.
 */
export async function shutDown(
  app: FastifyInstance,
  lifecycle: Lifecycle,
  settings: ShutdownSettings,
  logger: Logger,
): Promise<ShutdownResult> {
  const started = performance.now();
  lifecycle.beginShutdown();
  await delay(settings.shutdownDelayMs).done;
  // The listener is closed before the line says so (fastify would close it a few ticks into app.close(), after
  // which it finds it closed and goes on); the callback comes once every connection has ended.
  const connectionsEnded = new Promise<void>((resolve) => app.server.close(() => resolve()));
  logger.info('shutting down: no longer accepting connections');
  const deadline = delay(settings.shutdownTimeoutMs - (performance.now() - started));
  const closed = Promise.all([connectionsEnded, app.close()]).then(() => 'drained' as const);
  const result = await Promise.race([closed, deadline.done.then(() => 'forced' as const)]);
  deadline.cancel();
  if (result === 'forced') {
    logger.error(
      { shutdownTimeoutMs: settings.shutdownTimeoutMs },
      'shutdown timeout reached: closing the connections still open',
    );
    app.server.closeAllConnections();
    await closed;
  }
  logger.info({ result, durationMs: Math.round(performance.now() - started) }, 'shut down');
  return result;
}
