// Every error hookguard throws on purpose, and every status the CLI exits with. Errors a user can fix are
// UserErrors: each carries its exit status, so the CLI catches one type, prints the message and exits with it.

/**
 * Every status `hookguard` exits with; `hookguard --help`, each command's usage and the README list them.
 * Several names share a number: they say which command returns it and why.
 */
export const EXIT = {
  ok: 0,
  /** check: an object would be denied. */
  denied: 1,
  /** sweep: a patch did not go through, or the cluster could not be listed. */
  failed: 1,
  /** why: a hook failed, is stuck or blocked, or the cluster could not be read. */
  hookFailing: 1,
  /** serve: connections still open at server.shutdownTimeoutMs were cut. */
  shutdownForced: 1,
  /** chart-hook: the API server refused the step (a CRD apply, a webhook configuration delete) or did not answer. */
  stepFailed: 1,
  /** A UserError: bad arguments, config, certificate files or manifests; stderr names the problem. */
  badInput: 2,
  /** Anything else: a bug in hookguard; stderr holds the stack trace. */
  internal: 3,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A problem the user can fix, said in their terms; the CLI prints the message and exits with `exitCode`. */
export abstract class UserError extends Error {
  readonly exitCode: ExitCode = EXIT.badInput;
}

/** Bad command-line arguments. */
export class UsageError extends UserError {
  override name = 'UsageError';
}

/** An invalid configuration setting, or one that cannot be used (a certificate file, a port): names the key. */
export class ConfigError extends UserError {
  override name = 'ConfigError';

  constructor(
    readonly key: string,
    /** What is wrong with the key's value, without the key: a flag that set it says it in its own name. */
    readonly problem: string,
  ) {
    super(`invalid config: ${key}: ${problem}`);
  }
}

/** The server cannot listen where it was told to: the address is taken, or not this host's, or not allowed. */
export class ListenError extends UserError {
  override name = 'ListenError';
}

/** Manifests `hookguard check` cannot read or evaluate. */
export class InputError extends UserError {
  override name = 'InputError';
}

/** A request body the webhook cannot read as JSON; Fastify answers it with statusCode (400) and the message. */
export class BodyError extends Error {
  readonly statusCode = 400;
}

/** One reading of what went wrong talking to the API server (src/kube/api-failure.ts reads client-node's errors). */
export interface ApiFailure {
  /** HTTP status; undefined when no answer came (connection refused, reset, timeout). */
  status: number | undefined;
  /** The API server's own words (the Status message), or the network error. */
  message: string;
  /** From the Retry-After header, or the Status details. */
  retryAfterSeconds: number | undefined;
}

/** What the API server said, for a person: `HTTP 403: <its message>`, or the message alone when nothing answered. */
export function apiFailureText(failure: ApiFailure): string {
  return failure.status === undefined ? failure.message : `HTTP ${failure.status}: ${failure.message}`;
}

/** An API call that failed for good (after the retries it was allowed). */
export class ApiCallError extends Error {
  override name = 'ApiCallError';

  constructor(readonly failure: ApiFailure) {
    super(apiFailureText(failure));
  }
}

/**
 * A bug in hookguard (a TypeError, a RangeError), not the cluster's doing: a command that reports what the API server
 * said rethrows it, and main.ts prints its stack and exits with EXIT.internal.
 */
export function isBug(error: unknown): boolean {
  return error instanceof TypeError || error instanceof RangeError;
}
