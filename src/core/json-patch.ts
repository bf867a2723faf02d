// fast-json-patch is a CommonJS package whose named exports Node cannot see from an ES module: its default export
// is the module object, typed by the package's own declarations. Everything reaches it through here.
import jsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';

export type { Operation };

export const { applyPatch } = jsonPatch;

/**
 * The JSON Patch from `before` to `after`: the same operations, in the same order, as fast-json-patch's `compare`
 * (duplex.js `_generate`, v3.1.1), whose patches the goldens hold. Unlike it, the values are `after`'s own, not deep
 * copies (a JSON round trip each, a third of the diff's time): `after` must be a copy that nothing writes to once
 * diffed, as decide()'s mutated clone is.
 */
export function compare(before: unknown, after: unknown): Operation[] {
  const patch: Operation[] = [];
  if (isContainer(before) && isContainer(after)) diffInto(before, after, '', patch);
  return patch;
}

type Container = Record<string, unknown> | unknown[];

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

/** fast-json-patch's `_objectKeys`: an array's indices as strings, an object's own keys. */
function keysOf(value: Container): string[] {
  if (!Array.isArray(value)) return Object.keys(value);
  const keys: string[] = [];
  for (let index = 0; index < value.length; index++) keys.push(String(index));
  return keys;
}

/** RFC 6901: "~" and "/" in a key are written "~0" and "~1". */
function pointerSegment(key: string): string {
  return key.includes('/') || key.includes('~') ? key.replace(/~/g, '~0').replace(/\//g, '~1') : key;
}

function diffInto(before: Container, after: Container, path: string, patch: Operation[]): void {
  if (before === after) return;
  const oldRecord = before as Record<string, unknown>;
  const newRecord = after as Record<string, unknown>;
  const afterIsArray = Array.isArray(after);
  const oldKeys = keysOf(before);
  const newKeys = keysOf(after);
  let deleted = false;
  // Old keys last to first (so removals from an array keep the earlier indices valid), then the new keys in order.
  for (let index = oldKeys.length - 1; index >= 0; index--) {
    const key = oldKeys[index]!;
    const oldValue = oldRecord[key];
    const newValue = newRecord[key];
    if (Object.hasOwn(after, key) && !(newValue === undefined && oldValue !== undefined && !afterIsArray)) {
      if (isContainer(oldValue) && isContainer(newValue) && Array.isArray(oldValue) === Array.isArray(newValue)) {
        diffInto(oldValue, newValue, `${path}/${pointerSegment(key)}`, patch);
      } else if (oldValue !== newValue) {
        // An undefined array item is null in JSON, as fast-json-patch's copy made it.
        patch.push({ op: 'replace', path: `${path}/${pointerSegment(key)}`, value: newValue ?? null });
      }
    } else if (Array.isArray(before) === afterIsArray) {
      patch.push({ op: 'remove', path: `${path}/${pointerSegment(key)}` });
      deleted = true;
    } else {
      patch.push({ op: 'replace', path, value: after });
    }
  }
  if (!deleted && newKeys.length === oldKeys.length) return;
  for (const key of newKeys) {
    if (!Object.hasOwn(before, key) && newRecord[key] !== undefined) {
      patch.push({ op: 'add', path: `${path}/${pointerSegment(key)}`, value: newRecord[key] });
    }
  }
}
