import { symbols, type Logger } from 'pino';
import type { Decision } from '../core/decide.js';
import { isRecord, metadataOf } from '../core/objects.js';
import type { AdmissionRequest, Endpoint, Finding, KubeObject } from '../core/types.js';

const BEYOND_ASCII = /[\u0080-\uffff]/;
const BEYOND_ASCII_ALL = /[\u0080-\uffff]/g;
// JSON.rawJSON (Node.js 21 and later; not yet in TypeScript's lib): a string's JSON text, written as it is.
const rawJson = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON;

/**
 * `text` as a JSON string that JSON.parse reads back the same, written in ASCII alone (`\u2026` for "…").
 *
 * V8 holds a string with one character beyond Latin-1 at two bytes a character, and so JSON.stringify's output with
 * it in, and a turn's log lines joined with that one. The line then took V8's slow UTF-8 encoding: a shortened
 * kubectl command's "…" in one finding made a hook's audit line cost the server about 60,000 more instructions
 * (docs/benchmark.md, "The audit line"). Escaped, it stays one byte a character. Texts in ASCII pass as they are.
 */
function asciiJson(text: string): unknown {
  if (!BEYOND_ASCII.test(text)) return text;
  const escaped = JSON.stringify(text).replace(
    BEYOND_ASCII_ALL,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  // The replace's result keeps its source's two bytes a character: latin1 round trip makes it one.
  return rawJson(Buffer.from(escaped, 'latin1').toString('latin1'));
}

/** The findings, their prose as asciiJson writes it; the same list when all of it is ASCII, as it nearly always is. */
function asciiFindings(findings: readonly Finding[]): readonly unknown[] {
  let copy: unknown[] | undefined;
  for (let index = 0; index < findings.length; index++) {
    const finding = findings[index] as Finding;
    const message = asciiJson(finding.message);
    const note = finding.note === undefined ? undefined : asciiJson(finding.note);
    if (message === finding.message && note === finding.note) continue;
    copy ??= findings.slice();
    copy[index] = { ...finding, message, note };
  }
  return copy ?? findings;
}

/**
 * A finding as a brief line writes it: the rule, what it did, the advisory that made it and the mitigation found
 * missing (when there are). Its prose is in the answer's warnings (cut at 120 characters), and whole with
 * `log.auditDetail: full` or `hookguard check`.
 */
function briefFindings(findings: readonly Finding[]): readonly unknown[] {
  return findings.map((finding) => ({
    rule: finding.rule,
    action: finding.action,
    advisory: finding.advisory,
    missingMitigation: finding.missingMitigation,
  }));
}

/**
 * How much an audit line says (`log.auditDetail`): `brief`, what was asked, the outcome and each finding's rule and
 * action; `full` adds each finding's message and note, the rules that ran and the hook's system and phases.
 */
export type AuditDetail = 'brief' | 'full';

/** The one audit log line every admission decision writes. */
export function auditRecord(
  request: AdmissionRequest,
  endpoint: Endpoint,
  decision: Decision | undefined,
  durationMs: number,
  detail: AuditDetail,
  // Wrapped, because a rule may throw anything, undefined included.
  failure?: { error: unknown },
) {
  const full = detail === 'full';
  const object = (
    isRecord(request.object) ? request.object : isRecord(request.oldObject) ? request.oldObject : {}
  ) as KubeObject;
  const metadata = metadataOf(object);
  // One literal with every key (JSON leaves out the undefined ones): conditional spreads cost a lot per request.
  return {
    uid: request.uid,
    endpoint,
    operation: request.operation,
    kind: request.kind?.kind ?? object.kind,
    namespace: request.namespace ?? metadata?.namespace,
    name: request.name ?? metadata?.name ?? metadata?.generateName,
    user: request.userInfo?.username,
    dryRun: request.dryRun === true,
    mode: decision?.mode,
    argocdVersion: decision?.argocdVersion ?? null,
    argocdVersionFrom: decision?.argocdVersionFrom,
    hook: full ? decision?.hook : undefined,
    optOuts: decision?.optOuts,
    // The rules in scope for the object's kind and endpoint, the same list on most lines: an eighth of a hook's full
    // line. A brief line names the rules that found something, in its findings.
    rules: full ? (decision?.rules ?? []) : undefined,
    // Only the ops that were not sent (audit mode): those that were are in the answer and the object the API server
    // stored, each described by its `mutate` finding. Written again here, they were about a third of a hook's audit
    // line and two fifths of the instructions that line cost the server (docs/benchmark.md, "The audit line").
    patch: decision?.withheldPatch ?? [],
    patchApplied: (decision?.patch.length ?? 0) > 0,
    allowed: decision?.allowed ?? true,
    reason: failure ? 'internal error, allowed unchanged' : decision?.reason,
    denial: decision?.denial === undefined ? undefined : asciiJson(decision.denial),
    // The findings' prose was a quarter of a hook's line; with the rules that ran, it cost about 30,000 instructions
    // a line (docs/benchmark.md, "The brief audit line").
    findings: decision ? (full ? asciiFindings(decision.findings) : briefFindings(decision.findings)) : [],
    error: failure ? (failure.error instanceof Error ? failure.error.message : String(failure.error)) : undefined,
    durationMs: Math.round(durationMs * 1000) / 1000,
  };
}

/** A log destination as pino writes to it: the `pino.metadata` ones (BoundedLogDestination) also get the line's facts. */
interface PinoDestination {
  write(line: string): void;
  [symbols.needsMetadataGsym]?: boolean;
  lastLevel?: number;
  lastObj?: unknown;
  lastMsg?: string;
  lastTime?: string;
  lastLogger?: Logger;
}

/** pino's state kept under its exported symbols (pino.d.ts `symbols`, "for integration purposes"). */
interface PinoInternals {
  [symbols.streamSym]: PinoDestination;
  [symbols.timeSym]: () => string;
  [symbols.chindingsSym]: string;
  [symbols.lsCacheSym]: Record<number, string>;
  [symbols.endSym]: string;
  [symbols.timeSliceIndexSym]: number;
}

/**
 * Writes an audit line the way `logger.info({ audit: record }, message)` writes it, to the same destination and
 * byte for byte the same (test/unit/audit-line.test.ts holds it to pino's own), but with the record's JSON.stringify
 * as its one serialisation: pino's field loop, string escaping and merging cost about 11,000 instructions a line
 * beyond it (docs/benchmark.md, "The brief audit line"). hookguard's loggers have no mixin, log formatter, redaction or
 * write hook, which this does not apply.
 */
export function auditLineWriter(logger: Logger, message: string): (record: object) => void {
  const pinoState = logger as unknown as PinoInternals;
  const infoLevel = logger.levels.values.info as number;
  const messageText = `,"msg":${JSON.stringify(message)}`;
  return (record) => {
    if (!logger.isLevelEnabled('info')) return;
    const time = pinoState[symbols.timeSym]();
    const destination = pinoState[symbols.streamSym];
    if (destination[symbols.needsMetadataGsym] === true) {
      // As pino's write() sets them (lib/proto.js): BoundedLogDestination tells an audit line by lastObj.
      destination.lastLevel = infoLevel;
      destination.lastObj = { audit: record };
      destination.lastMsg = message;
      destination.lastTime = time.slice(pinoState[symbols.timeSliceIndexSym]);
      destination.lastLogger = logger;
    }
    destination.write(
      `${pinoState[symbols.lsCacheSym][infoLevel]}${time}${pinoState[symbols.chindingsSym]},"audit":${JSON.stringify(record)}${messageText}${pinoState[symbols.endSym]}`,
    );
  };
}
