// Reading manifests for `hookguard check`: a multi-document YAML or JSON text split into the Kubernetes objects it
// holds, each with where it came from (file, document, line), so every result can be traced back to its source.
import { parseAllDocuments, type Document } from 'yaml';
import { isRecord } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';
import { InputError } from '../errors.js';

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
}

export interface SourceDocument {
  source: Source;
  /** "stdin document 3", "chart.yaml document 1": how errors name it. */
  label: string;
  document: Document;
  /** The document's own text, separator and comments included. */
  text: string;
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

  textOf(line: number): string {
    const start = this.starts[line - 1] as number;
    const next = this.starts[line];
    return this.text.slice(start, next === undefined ? undefined : next - 1).trimEnd();
  }
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

/** Splits a multi-document YAML or JSON text into Kubernetes objects; empty documents are dropped. */
export function readDocuments(text: string, file: string): SourceDocument[] {
  const documents = parseAllDocuments(text);
  if (!Array.isArray(documents)) {
    // yaml returns an EmptyStream for input with no documents at all.
    return [];
  }
  const lines = new LineIndex(text);
  const objects: SourceDocument[] = [];
  documents.forEach((document, index) => {
    const label = `${fileLabel(file)} document ${index + 1}`;
    const error = document.errors[0];
    if (error) throw new InputError(`${label}: invalid YAML: ${error.message.split('\n')[0]}`);
    const value: unknown = document.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined || !document.contents) return;
    if (!isRecord(value))
      throw new InputError(
        `${label}: expected a Kubernetes object (a mapping), got ${Array.isArray(value) ? 'a list' : typeof value}`,
      );
    if (typeof value.apiVersion !== 'string' || typeof value.kind !== 'string') {
      throw new InputError(`${label}: not a Kubernetes object: apiVersion and kind must be strings`);
    }
    const line = firstLineOf(lines, index === 0 ? 0 : documents[index - 1]!.range[2], document.contents.range[0]);
    objects.push({
      source: { file, document: index + 1, line, firstLine: lines.textOf(line) },
      label,
      document,
      text: text.slice(document.range[0], document.range[2]),
      object: value,
    });
  });
  return objects;
}
