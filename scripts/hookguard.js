// `npm run hookguard -- ARGS`: the built CLI, from a checkout. Before the first build there is no dist/cli/main.js,
// and node would print a raw "Cannot find module" stack: this says so in one line on stderr and builds it first (the
// build's own output goes to stderr too, so stdout stays the command's). Then the CLI runs with these arguments,
// on the Node.js npm runs this with (the CLI itself refuses one older than engines).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('hookguard: not built yet (no dist/cli/main.js): building it first with npm run build\n');
  const build = spawnSync('npm', ['run', 'build', '--silent'], {
    cwd: new URL('..', import.meta.url),
    stdio: ['ignore', 2, 2],
  });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
await import(main.href);
