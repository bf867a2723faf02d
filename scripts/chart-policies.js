// `npm run chart:policies`: writes charts/hookguard/files/admission-policies.json, what the chart's
// admission.mode policies and both render, from src/policies (built first into dist/, which this reads). Rerun it
// after any change to src/policies or the rules; test/manifests/chart-policies.test.ts fails until then.
import { readFileSync, writeFileSync } from 'node:fs';
import { format, resolveConfig } from 'prettier';
import { chartPolicies } from '../dist/policies/chart.js';

const file = new URL('../charts/hookguard/files/admission-policies.json', import.meta.url);
let before = '';
try {
  before = readFileSync(file, 'utf8');
} catch (error) {
  if (error.code !== 'ENOENT') throw error;
}
const options = { ...(await resolveConfig(file.pathname)), filepath: file.pathname };
const after = await format(JSON.stringify(chartPolicies()), options);
if (after !== before) writeFileSync(file, after);
console.log(`charts/hookguard/files/admission-policies.json: ${after === before ? 'already current' : 'rewritten'}`);
