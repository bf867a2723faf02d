export interface BackoffSettings {
  initialMs: number;
  maxMs: number;
}

/**
 * Exponential backoff with "equal jitter": the ceiling doubles with each attempt up to maxMs, and the delay is
 * drawn from its upper half, so clients that failed together do not retry together, and never retry at once.
 */
export function backoffDelayMs(attempt: number, settings: BackoffSettings, random: () => number = Math.random): number {
  const ceiling = Math.min(settings.maxMs, settings.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
