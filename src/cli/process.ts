// The process around runHookguard: its arguments, stdin, stdout, stderr and environment, and its exit status. Loaded
// by main.ts once the Node.js running it is one package.json's engines allows.
import { EXIT } from '../errors.js';
import { runHookguard } from './hookguard.js';
import { readStream, type CommandIO } from './io.js';

const io: CommandIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readStdin: (maxBytes) => readStream(process.stdin, maxBytes),
  env: process.env,
  ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
};

// A reader that stops early (`hookguard rules | head`) closes the pipe: that ends the output, and is no error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit();
});

runHookguard(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`hookguard: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = EXIT.internal;
  },
);
