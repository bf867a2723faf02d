// autocannon ships no types; this declares the part of its programmatic API the bench and the tests use.
declare module 'autocannon' {
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  }
  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    amount?: number;
    timeout?: number;
    method?: string;
    headers?: Record<string, string>;
    requests?: Request[];
    /** Replaces each [<id>] in a body with a fresh id per request. */
    idReplacement?: boolean;
    tlsOptions?: Record<string, unknown>;
    servername?: string;
  }
  interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
    p99_9: number;
    total: number;
  }
  interface Result {
    duration: number;
    requests: Histogram & { sent: number };
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    mismatches: number;
    '2xx': number;
    '4xx': number;
    '5xx': number;
  }
  function autocannon(options: Options): Promise<Result> & { stop(): void };
  export default autocannon;
  export type { Options, Request, Result };
}
