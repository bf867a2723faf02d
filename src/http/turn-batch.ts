// The webhook's work of one turn of the event loop, done together once the turn's input has been read.
//
// Under concurrent calls, each request used to go through TLS, HTTP, its JSON body, its decision and its answer
// before the next one was read. Each of those steps evicted the others' code and data from the CPU caches, and a
// decision cost the server several times what it costs in a loop. Queued instead, and run back to back in the
// check phase (setImmediate), the bodies and decisions of a burst keep their code and data in the caches; the TLS
// writes of the answers follow them together. In three runs of `npm run bench`, the server's CPU per request fell to
// 0.6x to 0.66x on the Argo CD hooks and 0.56x to 0.74x on the mix (docs/benchmark.md, "Bodies and decisions in
// batches"). A lone request waits one setImmediate hop; a request of a burst also waits for the decisions of those
// read after it in the same turn.
//
// The batch holds at most the requests whose bodies arrived in one turn: each would have been decided in that turn.

/** A job that threw: it is the caller's bug, and the other jobs of the turn still run. */
export type JobFailure = (error: unknown) => void;

export class TurnBatch {
  readonly #jobs: (() => void)[] = [];
  #scheduled = false;

  constructor(private readonly jobFailed: JobFailure) {}

  /** Runs job after the current turn's input is read, with the other jobs of the turn, in the order they came. */
  defer(job: () => void): void {
    this.#jobs.push(job);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#drain);
    }
  }

  /** What work returns (or throws), worked out with the other jobs of the turn. */
  run<T>(work: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.defer(() => {
        try {
          resolve(work());
        } catch (error) {
          // A throw here is a bug (decide()'s own failures are answered, not thrown); fastify answers it with a 500.
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    });
  }

  readonly #drain = (): void => {
    try {
      // A job may queue another (a parsed body queuing its decision): it runs in this same drain.
      for (let index = 0; index < this.#jobs.length; index++) {
        try {
          (this.#jobs[index] as () => void)();
        } catch (error) {
          this.#report(error);
        }
      }
    } finally {
      // Whatever happened above, the next request starts a new batch: a batch left scheduled would queue every later
      // request for a drain that never comes, while /readyz still says 200.
      this.#jobs.length = 0;
      this.#scheduled = false;
    }
  };

  #report(error: unknown): void {
    try {
      this.jobFailed(error);
    } catch {
      // The failure handler failed too (a logger or a metric that throws): the jobs after this one still run, and
      // nothing is left that could say so.
    }
  }
}
