#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { InputError } from '../offline/check.js';
import { ConfigError } from '../config.js';
import { runAdvisories, runRules } from './advisories.js';
import { CHECK_USAGE, runCheck } from './check.js';
import { EXIT, readStream, UsageError, type CommandIO } from './io.js';
import { runServe, SERVE_USAGE } from './serve.js';
import { runSweep, SWEEP_USAGE } from './sweep.js';

const USAGE = `hookguard: keeps Helm and Argo CD hook Jobs from getting stuck.

Commands:
  serve        run the admission webhook (HTTPS)
  check        run the rules offline over manifests (helm template ... | hookguard check -)
  advisories   list the known Argo CD races hookguard guards against
  rules        list the rule catalog
  sweep        remove Argo CD hook finalizers nothing will remove (dry run unless --apply)

${SERVE_USAGE}

${CHECK_USAGE}

${SWEEP_USAGE}
`;

const commands: Record<string, (argv: readonly string[], io: CommandIO) => Promise<number>> = {
  serve: runServe,
  check: runCheck,
  advisories: runAdvisories,
  rules: runRules,
  sweep: runSweep,
};

async function main(argv: readonly string[], io: CommandIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.stdout(USAGE);
    return name === undefined ? EXIT.badInput : EXIT.ok;
  }
  if (name === '--version') {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    io.stdout(`${version}\n`);
    return EXIT.ok;
  }
  const command = commands[name];
  if (!command) {
    io.stderr(`hookguard: unknown command "${name}"\n\n${USAGE}`);
    return EXIT.badInput;
  }
  try {
    return await command(rest, io);
  } catch (error) {
    const known = error instanceof ConfigError || error instanceof InputError || error instanceof UsageError;
    const argumentError = (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true;
    if (!known && !argumentError) throw error;
    io.stderr(`hookguard ${name}: ${(error as Error).message}\n`);
    return EXIT.badInput;
  }
}

const io: CommandIO = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readStdin: () => readStream(process.stdin),
  env: process.env,
};

main(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`hookguard: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 3;
  },
);
