import { InputError } from '../errors.js';

/** What a command touches of the outside world, so tests can run commands in-process. */
export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** All of standard input; refused (an InputError) past `maxBytes`, without reading the rest. */
  readStdin: (maxBytes?: number) => Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
  /** The terminal's width when standard output is one; undefined when it is a pipe or a file (nothing is wrapped). */
  columns?: number;
}

export async function readStream(stream: NodeJS.ReadableStream, maxBytes = Infinity): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    length += buffer.length;
    if (length > maxBytes)
      throw new InputError(
        `standard input: the input is larger than ${maxBytes} bytes (check.maxInputBytes); raise it with --max-input-bytes`,
      );
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
