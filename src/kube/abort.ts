// Per-call cancellation for client-node's typed clients: its fetch takes an AbortSignal from the request context,
// and a middleware is the one place a caller can set it.
import { Observable, type ConfigurationOptions, type ObservableMiddleware } from '@kubernetes/client-node';

/** Options that abort the call when `signal` does. */
export function abortWith(signal: AbortSignal): ConfigurationOptions {
  const middleware: ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (context) => new Observable(Promise.resolve(context)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

/** Aborts with `stop`, or after `timeoutMs`, whichever comes first. */
export function callSignal(stop: AbortSignal, timeoutMs: number): AbortSignal {
  return AbortSignal.any([stop, AbortSignal.timeout(Math.max(1, timeoutMs))]);
}
