// fast-json-patch is a CommonJS package whose named exports Node cannot see from an ES module: its default export
// is the module object, typed by the package's own declarations. Everything reaches it through here.
import jsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';

export type { Operation };

export const { compare, applyPatch } = jsonPatch;
