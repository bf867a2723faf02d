// A deliberately small shell scanner. It finds the simple commands of a POSIX sh / bash script and
// the exact source offsets of their words, so a caller can insert text into the script without
// re-serialising (and so subtly changing) anything else. Nothing is executed or expanded.

export interface ShellWord {
  /** offset of the word's first character in the script */
  start: number;
  /** offset just past the word's last character */
  end: number;
  /** the word exactly as written, quotes included */
  raw: string;
  /** the word after quote removal, or undefined when it contains an expansion ($x, $(…), `…`) */
  value: string | undefined;
}

export interface ShellScript {
  /** the simple commands, in the order the scanner finished them (a substitution's before its enclosing command) */
  commands: ShellWord[][];
  /** names the script defines as functions (`name() …`, `function name …`), as written */
  functionNames: string[];
}

/** Splits a script into simple commands (words between separators), including the commands inside
 *  $(…), backticks and ${…}. Heredoc bodies and comments are skipped: they are data, not commands.
 *  undefined for a script nested too deeply, or one that POSIX sh (dash) and bash would read differently. */
export function simpleCommands(script: string): ShellScript | undefined {
  const scanner = new Scanner(script);
  try {
    scanner.scanCommands();
  } catch (error) {
    if (error instanceof Unscannable) return undefined;
    throw error;
  }
  return { commands: scanner.commands, functionNames: scanner.functionNames };
}

// Real scripts nest substitutions a few levels deep; a bound keeps a hostile string from exhausting the stack.
const MAX_SUBSTITUTION_DEPTH = 64;

/** Where the scanner cannot tell for certain which text is a command, the caller leaves the script as written. */
class Unscannable extends Error {}

const BLANKS = new Set([' ', '\t']);
const WORD_BREAKS = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
// Longer operators first so that e.g. "<<-" is not read as "<<" followed by "-".
const REDIRECT_OPERATORS = ['<<<', '<<-', '<<', '<>', '<&', '<', '>>', '>&', '>|', '>', '&>>', '&>'];
const CONTROL_OPERATORS = [';;', '&&', '||', '|&', ';&', ';', '&', '|', '(', ')'];

type Closer = ')' | '`';

interface PendingHeredoc {
  delimiter: string;
  stripTabs: boolean;
}

class Scanner {
  readonly commands: ShellWord[][] = [];
  readonly functionNames: string[] = [];
  private pos = 0;
  private depth = 0;
  // Heredoc bodies start at the next newline, which may come after more words or commands.
  private pendingHeredocs: PendingHeredoc[] = [];

  constructor(private readonly src: string) {}

  /** Reads commands until the end of the script or the `closer` of an enclosing $(…) / `…`. */
  scanCommands(closer?: Closer): void {
    let words: ShellWord[] = [];
    const endCommand = (): void => {
      if (words.length > 0) this.commands.push(words);
      words = [];
    };
    // Subshell parentheses inside $(…) must not be taken for its closing parenthesis.
    let parenDepth = 0;
    while (this.pos < this.src.length) {
      const ch = this.src[this.pos]!;
      if (BLANKS.has(ch)) {
        this.pos++;
      } else if (this.src.startsWith('\\\n', this.pos)) {
        this.pos += 2; // line continuation
      } else if (ch === '\n') {
        endCommand();
        this.pos++;
        this.skipHeredocBodies();
      } else if (ch === '#') {
        this.skipComment(); // only reached at the start of a word, where '#' begins a comment
      } else if (ch === closer && (closer === '`' || parenDepth === 0)) {
        this.pos++;
        break;
      } else {
        const redirect = REDIRECT_OPERATORS.find((op) => this.src.startsWith(op, this.pos));
        const operator = CONTROL_OPERATORS.find((op) => this.src.startsWith(op, this.pos));
        if (redirect !== undefined) {
          this.readRedirect(redirect, closer);
        } else if (operator !== undefined) {
          endCommand();
          this.pos += operator.length;
          if (operator === '(') parenDepth++;
          if (operator === ')') parenDepth--;
        } else {
          const word = this.readWord(closer);
          const next = this.src[this.pos];
          // In "2>/dev/null" the 2 names a file descriptor; it is not an argument.
          const isFdNumber = /^\d+$/.test(word.raw) && (next === '<' || next === '>');
          if (words.length === 1 && words[0]!.raw === 'function') this.functionNames.push(word.raw);
          else if (words.length === 0 && this.atEmptyParentheses()) this.functionNames.push(word.raw);
          if (!isFdNumber) words.push(word);
        }
      }
    }
    endCommand();
  }

  /** "()" (blanks allowed) right after a command's first word makes that word a function's name. */
  private atEmptyParentheses(): boolean {
    return /^[ \t]*\([ \t]*\)/.test(this.src.slice(this.pos, this.pos + 64));
  }

  /** The redirection target is not an argument of the command; a heredoc delimiter is remembered. */
  private readRedirect(operator: string, closer: Closer | undefined): void {
    this.pos += operator.length;
    while (BLANKS.has(this.src[this.pos] ?? '')) this.pos++;
    const target = this.readWord(closer);
    if ((operator === '<<' || operator === '<<-') && target.raw !== '') {
      // Quoting the delimiter ('EOF', "EOF", \EOF) only disables expansion in the body.
      const delimiter = target.raw.replace(/["'\\]/g, '');
      this.pendingHeredocs.push({ delimiter, stripTabs: operator === '<<-' });
    }
  }

  private skipHeredocBodies(): void {
    for (const { delimiter, stripTabs } of this.pendingHeredocs) {
      while (this.pos < this.src.length) {
        const newline = this.src.indexOf('\n', this.pos);
        const lineEnd = newline === -1 ? this.src.length : newline;
        const line = this.src.slice(this.pos, lineEnd);
        this.pos = Math.min(lineEnd + 1, this.src.length);
        if ((stripTabs ? line.replace(/^\t+/, '') : line) === delimiter) break;
      }
    }
    this.pendingHeredocs = [];
  }

  private skipComment(): void {
    const newline = this.src.indexOf('\n', this.pos);
    this.pos = newline === -1 ? this.src.length : newline;
  }

  private readWord(closer: Closer | undefined): ShellWord {
    const start = this.pos;
    let value: string | undefined = '';
    const append = (text: string | undefined): void => {
      value = value === undefined || text === undefined ? undefined : value + text;
    };
    while (this.pos < this.src.length) {
      const ch = this.src[this.pos]!;
      if (WORD_BREAKS.has(ch) || (ch === '`' && closer === '`')) break;
      if (ch === '\\') append(this.readEscape(() => true));
      else if (ch === "'") append(this.readSingleQuoted());
      else if (ch === '"') append(this.readDoubleQuoted());
      else if (ch === '$' || ch === '`') append(this.readExpansion(false));
      else {
        append(ch);
        this.pos++;
      }
    }
    return { start, end: this.pos, raw: this.src.slice(start, this.pos), value };
  }

  /** A backslash quotes the next character when `escapes` allows it; backslash-newline vanishes. */
  private readEscape(escapes: (next: string) => boolean): string {
    const next = this.src[this.pos + 1];
    if (next === undefined || !escapes(next)) {
      this.pos++;
      return '\\';
    }
    this.pos += 2;
    return next === '\n' ? '' : next;
  }

  private readSingleQuoted(): string {
    const close = this.src.indexOf("'", this.pos + 1);
    const end = close === -1 ? this.src.length : close;
    const text = this.src.slice(this.pos + 1, end);
    this.pos = Math.min(end + 1, this.src.length);
    return text;
  }

  private readDoubleQuoted(): string | undefined {
    this.pos++;
    let value: string | undefined = '';
    while (this.pos < this.src.length) {
      const ch = this.src[this.pos]!;
      let text: string | undefined;
      if (ch === '"') {
        this.pos++;
        break;
      } else if (ch === '\\') {
        text = this.readEscape((next) => '$`"\\\n'.includes(next));
      } else if (ch === '$' || ch === '`') {
        text = this.readExpansion(true);
      } else {
        text = ch;
        this.pos++;
      }
      value = value === undefined || text === undefined ? undefined : value + text;
    }
    return value;
  }

  private nested(read: () => void): void {
    if (++this.depth > MAX_SUBSTITUTION_DEPTH) throw new Unscannable();
    read();
    this.depth--;
  }

  /** Reads `…`, $(…), $((…)), ${…}, $'…', $name or $1; returns undefined for all of those (their
   *  value is only known at run time) and "$" for a dollar sign that starts no expansion. Inside double
   *  quotes `$'` is a dollar sign and a quote (ANSI-C quoting exists outside quotes only). */
  private readExpansion(inDoubleQuotes: boolean): string | undefined {
    if (this.src[this.pos] === '`') {
      this.pos++;
      this.nested(() => this.scanCommands('`'));
      return undefined;
    }
    const next = this.src[this.pos + 1] ?? '';
    if (this.src.startsWith('$((', this.pos)) {
      this.pos++;
      this.skipBalanced('(', ')'); // arithmetic: no commands inside, and "<<" there is a shift
    } else if (next === '(') {
      this.pos += 2;
      this.nested(() => this.scanCommands(')'));
    } else if (next === '{') {
      this.pos += 2;
      this.nested(() => this.readParameterExpansion(inDoubleQuotes));
    } else if (next === "'" && !inDoubleQuotes) {
      this.readAnsiCQuoted();
    } else if (/[A-Za-z_]/.test(next)) {
      this.pos++;
      while (/[A-Za-z0-9_]/.test(this.src[this.pos] ?? '')) this.pos++;
    } else if (/[0-9@*#?$!-]/.test(next)) {
      this.pos += 2;
    } else {
      this.pos++;
      return '$';
    }
    return undefined;
  }

  /** The rest of ${…} after "${": it ends at the first "}" outside quotes and expansions (braces do not nest),
   *  and its words (${x:-word}) are quoted and expanded as elsewhere, so "$(…)" there runs commands. */
  private readParameterExpansion(inDoubleQuotes: boolean): void {
    while (this.pos < this.src.length) {
      const ch = this.src[this.pos]!;
      if (ch === '}') {
        this.pos++;
        return;
      }
      if (ch === '\\') this.pos += 2;
      // In "${x:-'}'}" bash pairs the single quotes and dash does not: which "}" ends it depends on the shell.
      else if (ch === "'" && inDoubleQuotes) throw new Unscannable();
      else if (ch === "'") this.readSingleQuoted();
      else if (ch === '"') this.readDoubleQuoted();
      else if (ch === '$' || ch === '`') this.readExpansion(inDoubleQuotes);
      else this.pos++;
    }
    this.pos = Math.min(this.pos, this.src.length);
  }

  /** $'…' after bash's ANSI-C rules, where \' does not end it; in dash (no $'…') it does, so a \' makes the
   *  two shells disagree on where the string ends. */
  private readAnsiCQuoted(): void {
    this.pos += 2;
    while (this.pos < this.src.length && this.src[this.pos] !== "'") {
      if (this.src.startsWith("\\'", this.pos)) throw new Unscannable();
      this.pos += this.src[this.pos] === '\\' ? 2 : 1;
    }
    this.pos = Math.min(this.pos + 1, this.src.length);
  }

  /** Skips from an opening bracket to its matching close, honouring backslash escapes only. */
  private skipBalanced(open: string, close: string): void {
    let depth = 0;
    while (this.pos < this.src.length) {
      const ch = this.src[this.pos]!;
      this.pos += ch === '\\' ? 2 : 1;
      if (ch === open) depth++;
      if (ch === close && --depth === 0) break;
    }
    this.pos = Math.min(this.pos, this.src.length);
  }
}
