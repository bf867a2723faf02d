// Makes `kubectl delete` in hook containers idempotent. A hook pod that is retried after its delete
// already succeeded fails with NotFound, which can leave e.g. `helm uninstall` stuck forever;
// `--ignore-not-found` turns that retry into a no-op.
import { BoundedCache } from './bounded-cache.js';
import { imageRepository } from './image.js';
import { simpleCommands } from './shell-words.js';

export interface ContainerCommand {
  command?: string[];
  args?: string[];
  image?: string;
}

export interface DeleteRewrite {
  /** new command array, only present if it changed */
  command?: string[];
  /** new args array, only present if it changed */
  args?: string[];
  /** one short human-readable line per kubectl delete made idempotent */
  changes: readonly string[];
}

const IGNORE_NOT_FOUND = '--ignore-not-found';
const MAX_CHANGE_LENGTH = 80;

/** kubectl global flags whose value is the next argv element (unless written --flag=value). */
const GLOBAL_FLAGS_WITH_VALUE = new Set([
  '-n',
  '--namespace',
  '--context',
  '--kubeconfig',
  '--cluster',
  '--user',
  '-s',
  '--server',
  '--token',
  '--as',
  '--as-group',
  '--as-uid',
  '--request-timeout',
  '--cache-dir',
  '--certificate-authority',
  '--client-certificate',
  '--client-key',
  '--tls-server-name',
  '-v',
  '--v',
  '--username',
  '--password',
  '--profile',
  '--profile-output',
]);

const SHELLS = new Set(['sh', 'bash', 'ash', 'dash', 'zsh']);
// A shell's options that take the next word as their value (`-o pipefail`).
const SHELL_OPTIONS_WITH_VALUE = new Set(['-o', '+o', '-O', '+O']);

/** Words that may come before the command name of a simple command. */
const RESERVED_WORDS = new Set(['if', 'then', 'else', 'elif', 'do', 'while', 'until', '!', '{']);
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

interface Wrapper {
  /** options that consume the following word */
  optionsWithValue: string[];
  /** words after the options that are not the wrapped command (timeout's duration) */
  operands: number;
}

/** Commands that run the rest of their arguments as a command. */
const WRAPPERS = new Map<string, Wrapper>([
  ['exec', { optionsWithValue: ['-a'], operands: 0 }],
  ['command', { optionsWithValue: [], operands: 0 }],
  ['nice', { optionsWithValue: ['-n'], operands: 0 }],
  ['nohup', { optionsWithValue: [], operands: 0 }],
  ['time', { optionsWithValue: [], operands: 0 }],
  ['env', { optionsWithValue: ['-u', '-C', '-S'], operands: 0 }],
  ['timeout', { optionsWithValue: ['-s', '-k'], operands: 1 }],
  ['xargs', { optionsWithValue: ['-I', '-n', '-P', '-L', '-d', '-a', '-E', '-s'], operands: 0 }],
]);

/** undefined when nothing needs to change */
export function makeKubectlDeletesIdempotent(
  container: ContainerCommand,
  kubectlImages: readonly string[],
): DeleteRewrite | undefined {
  if (typeof container !== 'object' || container === null) return undefined;
  const { command = [], args = [] } = container;
  if (!isStringArray(command) || !isStringArray(args)) return undefined;
  if (command.length === 0) {
    // The image's entrypoint is kubectl, so args are kubectl's argv without argv[0]. With a
    // non-empty args the insertion always lands in args, never in this stand-in command.
    if (!isKubectlImage(container.image, kubectlImages)) return undefined;
    return rewriteExecForm(['kubectl'], args, 'kubectl image args');
  }
  // Most containers run neither kubectl nor a shell: they are passed over without building their argv. Only a
  // command that is kubectl itself has an exec form to rewrite; `env` and the shells may run a script.
  const name = commandName(command[0]);
  if (name === 'kubectl') return rewriteExecForm(command, args, 'exec form');
  if (name !== 'env' && !SHELLS.has(name)) return undefined;
  return rewriteShellForm(command, args);
}

/** Compares repositories, ignoring tag, digest and Docker Hub's implicit "docker.io/library/". */
export function isKubectlImage(image: string | undefined, kubectlImages: readonly string[]): boolean {
  if (typeof image !== 'string' || image === '') return false;
  return kubectlRepositories(kubectlImages).has(imageRepository(image));
}

// The configured list is fixed for the life of the config: its repositories are worked out once, not per container.
const repositoriesOfList = new WeakMap<readonly string[], ReadonlySet<string>>();

function kubectlRepositories(kubectlImages: readonly string[]): ReadonlySet<string> {
  let repositories = repositoriesOfList.get(kubectlImages);
  if (!repositories)
    repositoriesOfList.set(kubectlImages, (repositories = new Set(kubectlImages.map(imageRepository))));
  return repositories;
}

function rewriteExecForm(command: string[], args: string[], form: string): DeleteRewrite | undefined {
  const argv = [...command, ...args];
  const index = execFormInsertIndex(argv);
  if (index === undefined) return undefined;
  const changes = [describeChange(argv, form)];
  // Appending (rather than inserting mid-array) keeps the caller's JSON Patch a single `add`.
  if (index < command.length || args.length === 0) {
    return { command: command.toSpliced(index, 0, IGNORE_NOT_FOUND), changes };
  }
  return { args: args.toSpliced(index - command.length, 0, IGNORE_NOT_FOUND), changes };
}

/** Where --ignore-not-found goes in a kubectl argv: the end, or before a bare "--". */
function execFormInsertIndex(argv: readonly string[]): number | undefined {
  if (commandName(argv[0]) !== 'kubectl') return undefined;
  const subcommand = subcommandIndex(argv);
  if (subcommand === undefined || argv[subcommand] !== 'delete') return undefined;
  const doubleDash = argv.indexOf('--', subcommand);
  const endOfFlags = doubleDash === -1 ? argv.length : doubleDash;
  return hasIgnoreNotFound(argv.slice(0, endOfFlags)) ? undefined : endOfFlags;
}

function rewriteShellForm(command: string[], args: string[]): DeleteRewrite | undefined {
  const argv = [...command, ...args];
  const index = shellScriptIndex(argv);
  if (index === undefined) return undefined;
  const rewritten = rewriteScript(argv[index]!);
  if (rewritten === undefined) return undefined;
  const { script, changes } = rewritten;
  return index < command.length
    ? { command: command.with(index, script), changes }
    : { args: args.with(index - command.length, script), changes };
}

/** Index of the script in `sh -c <script>`, `bash -euo pipefail -c <script>`, `env bash -ec <script>`… */
function shellScriptIndex(argv: readonly string[]): number | undefined {
  let i = commandName(argv[0]) === 'env' ? 1 : 0;
  if (!SHELLS.has(commandName(argv[i]))) return undefined;
  let hasDashC = false;
  for (i++; i < argv.length; i++) {
    const option = argv[i]!;
    if (SHELL_OPTIONS_WITH_VALUE.has(option))
      i++; // these take a value: -o pipefail
    else if (/^[-+][A-Za-z]+$/.test(option)) hasDashC ||= option.startsWith('-') && option.includes('c');
    else if (option === '--' || !option.startsWith('--')) break; // "--" or the first operand
  }
  if (argv[i] === '--') i++;
  return hasDashC && i < argv.length ? i : undefined;
}

interface ScriptRewrite {
  script: string;
  changes: readonly string[];
}

/**
 * Each script's rewrite (or null: none), by its text: a chart's hook sends the same script on every install and sync,
 * and scanning it was the rule's main cost. Bounded (BoundedCache): a tenant may send any number of distinct scripts.
 */
const scriptRewrites = new BoundedCache<ScriptRewrite | null>(512, 1 << 20, (rewrite) =>
  rewrite === null ? 0 : rewrite.script.length + rewrite.changes.reduce((sum, change) => sum + change.length, 0),
);

/** Inserts " --ignore-not-found" after every unquoted `delete` subcommand word; nothing else moves. */
function rewriteScript(script: string): ScriptRewrite | undefined {
  // Only a word written exactly `delete` is rewritten (below): a script without that text needs no scan, and most
  // hook scripts have none.
  if (!script.includes('delete')) return undefined;
  return scriptRewrites.get(script, scanScript) ?? undefined;
}

function scanScript(script: string): ScriptRewrite | null {
  const insertAt: number[] = [];
  const changes: string[] = [];
  const scanned = simpleCommands(script);
  // A script nested beyond what the scanner follows, or read differently by sh and bash, is left exactly as written.
  if (scanned === undefined) return null;
  // A script's own kubectl (a function or an alias) may take anything: its arguments are the author's business.
  if (scanned.functionNames.some((name) => commandName(name) === 'kubectl')) return null;
  for (const words of scanned.commands) {
    // Words we cannot evaluate ("$NS") stay as written: they are never kubectl, delete or a flag name.
    const argv = words.map((word) => word.value ?? word.raw);
    const start = commandNameIndex(argv);
    if (start === undefined) continue;
    if (argv[start] === 'alias' && argv.slice(start + 1).some((word) => word.startsWith('kubectl='))) return null;
    if (commandName(argv[start]) !== 'kubectl') continue;
    const kubectlArgv = argv.slice(start);
    const subcommand = subcommandIndex(kubectlArgv);
    if (subcommand === undefined || hasIgnoreNotFound(kubectlArgv)) continue;
    const deleteWord = words[start + subcommand]!;
    if (deleteWord.raw !== 'delete') continue; // a quoted 'delete' is the author's business
    insertAt.push(deleteWord.end);
    changes.push(
      describeChange(
        words.slice(start).map((word) => word.raw),
        'shell script',
      ),
    );
  }
  if (insertAt.length === 0) return null;
  // Frozen: the cache hands the same rewrite to every request with this script.
  return Object.freeze({
    script: insertAfterEach(script, insertAt, ` ${IGNORE_NOT_FOUND}`),
    changes: Object.freeze(changes),
  });
}

/** One pass over the script, however many insertions: rebuilding it once per insertion grows with their square. */
function insertAfterEach(script: string, offsets: number[], text: string): string {
  const pieces: string[] = [];
  let copied = 0;
  for (const offset of offsets.sort((a, b) => a - b)) {
    pieces.push(script.slice(copied, offset), text);
    copied = offset;
  }
  pieces.push(script.slice(copied));
  return pieces.join('');
}

/** Index of the command name, past assignments, reserved words and wrappers such as `xargs -r`. */
function commandNameIndex(argv: readonly string[]): number | undefined {
  let i = 0;
  while (i < argv.length) {
    const word = argv[i]!;
    if (ASSIGNMENT.test(word) || RESERVED_WORDS.has(word)) {
      i++;
      continue;
    }
    const wrapper = WRAPPERS.get(commandName(word));
    if (wrapper === undefined) return i;
    i++;
    while (argv[i]?.startsWith('-')) {
      const option = argv[i]!;
      i += wrapper.optionsWithValue.includes(option) ? 2 : 1;
      if (option === '--') break;
    }
    i += wrapper.operands;
  }
  return undefined;
}

/** Index of kubectl's subcommand in its argv (argv[0] being kubectl), past global flags. */
function subcommandIndex(argv: readonly string[]): number | undefined {
  for (let i = 1; i < argv.length; i++) {
    const token = argv[i]!;
    if (!token.startsWith('-')) return i;
    if (GLOBAL_FLAGS_WITH_VALUE.has(token)) i++;
  }
  return undefined;
}

/** Any explicit --ignore-not-found, including =false, is a decision already made by the author. */
function hasIgnoreNotFound(argv: readonly string[]): boolean {
  return argv.some((token) => token === IGNORE_NOT_FOUND || token.startsWith(`${IGNORE_NOT_FOUND}=`));
}

function commandName(path: string | undefined): string {
  return path === undefined ? '' : path.slice(path.lastIndexOf('/') + 1);
}

function describeChange(kubectlArgv: readonly string[], form: string): string {
  const suffix = ` (${form})`;
  const text = ['kubectl', ...kubectlArgv.slice(1)].join(' ').replace(/\s+/g, ' ');
  const room = MAX_CHANGE_LENGTH - suffix.length;
  return (text.length > room ? `${text.slice(0, room - 1)}…` : text) + suffix;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}
