// Reading manifests for `hookguard check`: a multi-document YAML or JSON text split into the Kubernetes objects it
// holds, each with where it came from (file, document, line), so every result can be traced back to its source.
import { parseAllDocuments, Parser, type CST } from 'yaml';
import { DEFAULTS } from '../config/keys.js';
import { isRecord } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';
import { InputError } from '../errors.js';
import type { ParsedDocument } from './fix.js';
import { kubeValue, PARSE_OPTIONS, YamlReadError } from './yaml11.js';

/** Where an object came from; the shape the output formats (text, JSON, SARIF, JUnit) consume. */
export interface Source {
  /** The path as given on the command line, `-` for standard input. */
  file: string;
  /** 1-based index of the document in that file. */
  document: number;
  /** 1-based line where the document starts: its first line with more than a `---` separator, comments included. */
  line: number;
  /** The text of that line (for Helm's output, the `# Source: chart/templates/x.yaml` comment). */
  firstLine: string;
  /** 1-based index of the object in the document's `items`, when the document is a List. */
  item?: number;
  /** The template Helm 4 rendered the object from, as it tells a post-renderer (its annotation). */
  template?: string;
  /**
   * The chart's directory in the repository (`--chart-root`, or the chart `check` rendered): reports then point at
   * the template a document's `# Source:` names (src/report/report.ts reportLocation()).
   */
  chartRoot?: string;
}

/** One document of an input, with the objects it holds (none when empty, a List's items). */
export interface InputDocument extends ParsedDocument {
  /** Its text: from the end of the previous document to its own end, so an input's documents' texts make it up. */
  text: string;
  /** Its value as Kubernetes reads it; null when it is empty. */
  value: unknown;
  objects: SourceObject[];
}

/** One Kubernetes object to check, and where it is. */
export interface SourceObject {
  source: Source;
  /** "stdin document 3", "chart.yaml document 1 item 2": how errors name it. */
  label: string;
  /** JSON Pointer of the object in its document: '' for the document itself, `/items/N` for a List's item. */
  pointer: string;
  object: KubeObject;
}

/** How a file is named in messages: standard input as `stdin`, a file by its path as given. */
export function fileLabel(file: string): string {
  return file === '-' ? 'stdin' : file;
}

/** The 1-based line of each offset, found by binary search over the offsets where lines start. */
class LineIndex {
  private readonly starts: number[] = [0];

  constructor(private readonly text: string) {
    for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1))
      this.starts.push(index + 1);
  }

  lineOf(offset: number): number {
    let low = 0;
    let high = this.starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((this.starts[middle] as number) <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  }

  /** "line 12" and the line's text, to point at a place in a message. */
  where(offset: number): { line: number; text: string } {
    const line = this.lineOf(offset);
    return { line, text: this.textOf(line).trim() };
  }

  textOf(line: number): string {
    const start = this.starts[line - 1] as number;
    const next = this.starts[line];
    return this.text.slice(start, next === undefined ? undefined : next - 1).trimEnd();
  }
}

/** A List (`kind: List`, or a `*List` kind as `kubectl get -o yaml` prints): its items are the objects. */
function isList(value: Record<string, unknown>): boolean {
  return typeof value.kind === 'string' && value.kind.endsWith('List') && Array.isArray(value.items);
}

/** Helm 4 names each document's template in this annotation of what it pipes to a post-renderer (helm v4.3.2 pkg/action/action.go). */
const HELM_TEMPLATE_ANNOTATION = 'postrenderer.helm.sh/postrender-filename';

/** The source with the template Helm rendered the object from, when Helm said so. */
function withTemplate(source: Source, object: KubeObject): Source {
  const annotations = isRecord(object.metadata) ? object.metadata.annotations : undefined;
  const template = isRecord(annotations) ? annotations[HELM_TEMPLATE_ANNOTATION] : undefined;
  return typeof template === 'string' ? { ...source, template } : source;
}

function kubeObject(value: unknown, where: string): KubeObject {
  if (!isRecord(value))
    throw new InputError(
      `${where}: expected a Kubernetes object (a mapping), got ${Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value}`,
    );
  if (typeof value.apiVersion !== 'string' || typeof value.kind !== 'string') {
    throw new InputError(`${where}: not a Kubernetes object: apiVersion and kind must be strings`);
  }
  return value;
}

/**
 * The document's first line: the first one from where the document before it ended that holds more than a `---`
 * separator. Comments count (Helm's `# Source: chart/templates/job.yaml` names the template); at the latest, the line
 * its contents start on.
 */
function firstLineOf(lines: LineIndex, start: number, contentsStart: number): number {
  const last = lines.lineOf(contentsStart);
  for (let line = lines.lineOf(start); line < last; line++) {
    const text = lines.textOf(line).trim();
    if (text !== '' && text !== '---') return line;
  }
  return last;
}

type ScalarToken = CST.FlowScalar | CST.BlockScalar;

/** The scalars of a CST token, keys included: what the yaml package's composer would turn into values. */
function* scalarsOf(token: CST.Token | null | undefined): Generator<ScalarToken> {
  if (!token) return;
  switch (token.type) {
    case 'scalar':
    case 'single-quoted-scalar':
    case 'double-quoted-scalar':
    case 'block-scalar':
      yield token;
      return;
    case 'block-map':
    case 'block-seq':
    case 'flow-collection':
      for (const item of token.items) {
        yield* scalarsOf('key' in item ? item.key : undefined);
        yield* scalarsOf(item.value);
      }
      return;
    case 'document':
      yield* scalarsOf(token.value);
      return;
    default:
      return;
  }
}

/**
 * Refuses a text holding a scalar whose source is longer than `maxScalarBytes`, before the yaml package composes it:
 * its composer builds a double-quoted scalar a character at a time (compose/resolve-flow-scalar.js doubleQuotedValue),
 * which took 15 s and 1.2 GiB for one string of 30 MB. The lexer and parser that make the CST only slice the text.
 * A UTF-16 length is at most the UTF-8 length, so a scalar refused holds more than that many bytes.
 */
function refuseLongScalars(text: string, file: string, lines: LineIndex, maxScalarBytes: number): void {
  if (text.length <= maxScalarBytes) return;
  let document = 0;
  for (const token of new Parser().parse(text)) {
    if (token.type !== 'document') continue;
    document++;
    for (const scalar of scalarsOf(token)) {
      if (scalar.source.length <= maxScalarBytes) continue;
      const at = lines.where(scalar.offset);
      throw new InputError(
        `${fileLabel(file)} document ${document}, line ${at.line}: a scalar of ${scalar.source.length} characters is longer than ${maxScalarBytes} bytes (check.maxScalarBytes); Kubernetes stores no object that large (the API server refuses a request body over 3 MiB, etcd a value over 1.5 MiB)`,
      );
    }
  }
}

/**
 * Splits a multi-document YAML or JSON text into its documents and the Kubernetes objects they hold, read as
 * Kubernetes reads them (kubeValue(), src/offline/yaml11.ts); a List gives its items. A scalar longer than
 * `maxScalarBytes` (check.maxScalarBytes) is refused before any value is composed.
 */
export function readDocuments(
  text: string,
  file: string,
  chartRoot?: string,
  maxScalarBytes: number = DEFAULTS.check.maxScalarBytes,
): InputDocument[] {
  const lines = new LineIndex(text);
  refuseLongScalars(text, file, lines, maxScalarBytes);
  const parsed = parseAllDocuments(text, PARSE_OPTIONS);
  // yaml returns an EmptyStream for input with no documents at all.
  if (!Array.isArray(parsed) || parsed.length === 0) return [];
  let start = 0;
  return parsed.map((document, index) => {
    const end = index === parsed.length - 1 ? text.length : document.range[2];
    const begin = start;
    const own = text.slice(start, end);
    start = end;
    const label = `${fileLabel(file)} document ${index + 1}`;
    const error = document.errors[0];
    if (error) {
      const line = error.linePos?.[0].line;
      throw new InputError(`${label}${line ? `, line ${line}` : ''}: invalid YAML: ${error.message.trimEnd()}`);
    }
    let value: unknown;
    try {
      value = kubeValue(document);
    } catch (problem) {
      if (!(problem instanceof YamlReadError)) throw problem;
      if (problem.offset === undefined) throw new InputError(`${label}: ${problem.message}`);
      const at = lines.where(problem.offset);
      throw new InputError(`${label}, line ${at.line}: ${problem.message} (${at.text})`);
    }
    // Kept for --fix, which places its edits by this very parse (src/offline/fix.ts fixDocument()).
    const place = { input: text, start: begin, end, parsed: document };
    if (value === null || !document.contents) return { ...place, text: own, value: null, objects: [] };
    const object = kubeObject(value, label);
    const line = firstLineOf(lines, begin, document.contents.range[0]);
    const source: Source = {
      file,
      document: index + 1,
      line,
      firstLine: lines.textOf(line),
      ...(chartRoot === undefined ? {} : { chartRoot }),
    };
    if (!isList(object))
      return {
        ...place,
        text: own,
        value,
        objects: [{ source: withTemplate(source, object), label, pointer: '', object }],
      };
    const objects = (object.items as unknown[]).map((item, itemIndex) => {
      const where = `${label} item ${itemIndex + 1}`;
      const object = kubeObject(item, where);
      return {
        source: withTemplate({ ...source, item: itemIndex + 1 }, object),
        label: where,
        pointer: `/items/${itemIndex}`,
        object,
      };
    });
    return { ...place, text: own, value, objects };
  });
}
