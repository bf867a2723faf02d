// What a controller may ask of the API server: at most `maxConcurrent` calls at once, and no more than a token bucket
// lets through (`perSecond` refilled, up to `burst` saved), as client-go's rest client limits itself (a QPS and a
// Burst, flowcontrol.NewTokenBucketRateLimiter). Callers wait in order; a caller that asks a thousand calls at once
// (a Promise.all) holds a thousand small closures here, never a thousand requests on the wire.

export interface CallLimits {
  maxConcurrent: number;
  perSecond: number;
  burst: number;
}

export interface CallClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL_CLOCK: CallClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export class CallBudget {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private tokens: number;
  private refilledAt: number;
  /** The token bucket is taken one caller at a time, in order: the queue's head sleeps, the rest wait behind it. */
  private tokenTurn: Promise<void> = Promise.resolve();
  /** The most calls in flight at once so far, for the measurements of docs/reliability.md. */
  peakConcurrent = 0;

  constructor(
    private readonly limits: CallLimits,
    private readonly clock: CallClock = REAL_CLOCK,
  ) {
    this.tokens = limits.burst;
    this.refilledAt = clock.now();
  }

  /** Runs `call` once a slot and a token are free; the slot is given back however it ends. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    await this.slot();
    try {
      await this.token();
      return await call();
    } finally {
      this.release();
    }
  }

  private slot(): Promise<void> {
    if (this.running < this.limits.maxConcurrent) {
      this.took();
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.waiting.push(() => {
        this.took();
        resolve();
      }),
    );
  }

  private took(): void {
    this.running += 1;
    this.peakConcurrent = Math.max(this.peakConcurrent, this.running);
  }

  private release(): void {
    this.running -= 1;
    this.waiting.shift()?.();
  }

  private token(): Promise<void> {
    const turn = this.tokenTurn.then(async () => {
      this.refill();
      if (this.tokens < 1) {
        await this.clock.sleep(((1 - this.tokens) / this.limits.perSecond) * 1000);
        this.refill();
      }
      this.tokens -= 1;
    });
    this.tokenTurn = turn.catch(() => undefined);
    return turn;
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.limits.burst, this.tokens + ((now - this.refilledAt) / 1000) * this.limits.perSecond);
    this.refilledAt = now;
  }
}
