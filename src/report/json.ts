// `hookguard check --output json`: the results as data (JSON escapes every control character in a string).
import type { CheckReport } from './report.js';

export function renderJson({ results, notes }: CheckReport): string {
  return `${JSON.stringify({ results, notes }, null, 2)}\n`;
}
