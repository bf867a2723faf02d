/** What a command touches of the outside world, so tests can run commands in-process. */
export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  readStdin: () => Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
}

export async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

export class UsageError extends Error {
  override name = 'UsageError';
}

// serve exits with shutdownForced when connections were still open at server.shutdownTimeoutMs and were cut;
// sweep exits with failed when a patch did not go through.
export const EXIT = { ok: 0, denied: 1, failed: 1, badInput: 2, shutdownForced: 1 } as const;
