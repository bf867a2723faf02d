// Reads one page of a list (the JSON of a List or a PartialObjectMetadataList) without materializing all of it: the
// list's metadata, and only those items in whose JSON text a marker occurs, each parsed on its own. The rest are
// counted and skipped over byte by byte. A sweep over 100,000 objects wants the few being deleted: parsing every item
// of every page made V8 grow its young generation by tens of MiB, for objects dropped a moment later.
//
// The scan relies on JSON's own structure only: strings (with their escapes) are stepped over whole, so a brace or
// bracket inside a string never counts; bytes of multi-byte UTF-8 characters are all 0x80 or above and never look
// like one of JSON's ASCII delimiters. Anything that is not a JSON object with a list's shape is an error.

export interface ScannedPage {
  /** The list's `metadata` (resourceVersion, continue, remainingItemCount). */
  metadata: Record<string, unknown>;
  /** The items whose JSON text contains the marker, parsed, in order. */
  items: unknown[];
  /** Every item of the page, parsed or not. */
  itemCount: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function malformed(at: number, what: string): Error {
  return new Error(`the list is not valid JSON: ${what} at byte ${at}`);
}

function isSpace(byte: number | undefined): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function skipSpace(json: Buffer, at: number): number {
  let index = at;
  while (isSpace(json[index])) index += 1;
  return index;
}

/** Past the end of the string that opens at `at`. */
function endOfString(json: Buffer, at: number): number {
  let index = at + 1;
  for (;;) {
    const quote = json.indexOf(QUOTE, index);
    if (quote === -1) throw malformed(at, 'a string that never ends');
    let backslashes = 0;
    while (json[quote - 1 - backslashes] === BACKSLASH) backslashes += 1;
    // An escaped quote has an odd number of backslashes before it.
    if (backslashes % 2 === 0) return quote + 1;
    index = quote + 1;
  }
}

/** Past the end of the JSON value that begins at `at`. */
function endOfValue(json: Buffer, at: number): number {
  const first = json[at];
  if (first === QUOTE) return endOfString(json, at);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    let index = at;
    while (index < json.length) {
      const byte = json[index];
      if (byte === QUOTE) {
        index = endOfString(json, index);
        continue;
      }
      if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth += 1;
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        depth -= 1;
        if (depth === 0) return index + 1;
      }
      index += 1;
    }
    throw malformed(at, 'an object or array that never ends');
  }
  // A number, true, false or null: up to the next delimiter.
  let index = at;
  while (index < json.length) {
    const byte = json[index];
    if (byte === COMMA || byte === CLOSE_BRACE || byte === CLOSE_BRACKET || isSpace(byte)) break;
    index += 1;
  }
  if (index === at) throw malformed(at, 'a missing value');
  return index;
}

function expect(json: Buffer, at: number, byte: number, what: string): number {
  if (json[at] !== byte) throw malformed(at, `expected ${what}`);
  return at + 1;
}

function parse(json: Buffer, start: number, end: number): unknown {
  return JSON.parse(json.toString('utf8', start, end)) as unknown;
}

/** The list's metadata, and the items whose text contains `marker`, parsed. Throws on anything but a JSON object. */
export function scanListPage(json: Buffer, marker: string): ScannedPage {
  const needle = Buffer.from(marker, 'utf8');
  const page: ScannedPage = { metadata: {}, items: [], itemCount: 0 };
  let index = expect(json, skipSpace(json, 0), OPEN_BRACE, '{');
  // Where the marker occurs next (-1: nowhere further): searched again only once the scan has passed it, so the
  // search over the page is done once, not once per item.
  let nextMarker = json.indexOf(needle, index);
  for (;;) {
    index = skipSpace(json, index);
    if (json[index] === CLOSE_BRACE) break;
    const keyEnd = endOfString(json, expect(json, index, QUOTE, 'a key') - 1);
    const key = parse(json, index, keyEnd);
    index = skipSpace(json, expect(json, skipSpace(json, keyEnd), COLON, ':'));
    if (key === 'items' && json[index] === OPEN_BRACKET) {
      index = skipSpace(json, index + 1);
      while (json[index] !== CLOSE_BRACKET) {
        const end = endOfValue(json, index);
        page.itemCount += 1;
        if (nextMarker !== -1 && nextMarker < index) nextMarker = json.indexOf(needle, index);
        if (nextMarker !== -1 && nextMarker < end) page.items.push(parse(json, index, end));
        index = skipSpace(json, end);
        if (json[index] === COMMA) index = skipSpace(json, index + 1);
        else if (json[index] !== CLOSE_BRACKET) throw malformed(index, 'expected , or ]');
      }
      index += 1;
    } else {
      const end = endOfValue(json, index);
      if (key === 'metadata') {
        const metadata = parse(json, index, end);
        if (typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata))
          page.metadata = metadata as Record<string, unknown>;
      }
      index = end;
    }
    index = skipSpace(json, index);
    if (json[index] === COMMA) index += 1;
    else if (json[index] !== CLOSE_BRACE) throw malformed(index, 'expected , or }');
  }
  if (skipSpace(json, index + 1) !== json.length) throw malformed(index + 1, 'text after the list');
  return page;
}
