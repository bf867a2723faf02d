import type { KubeObject } from '../core/types.js';

/** An object from client-node's typed clients as the API's JSON: they turn timestamps into Dates, hookguard reads strings. */
export function plainObject(value: unknown): KubeObject {
  return JSON.parse(JSON.stringify(value)) as KubeObject;
}
