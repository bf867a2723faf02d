// `npm run chart:schema`: writes the `config` value's schema into charts/hookguard/values.schema.json, generated
// from the declaration in src/config/keys.ts (built first into dist/, which this reads). Rerun it after any change
// to keys.ts; test/manifests/chart-schema.test.ts fails until then.
import { readFileSync, writeFileSync } from 'node:fs';
import { format, resolveConfig } from 'prettier';
import { chartConfigSchema } from '../dist/config/chart-schema.js';

const file = new URL('../charts/hookguard/values.schema.json', import.meta.url);
const before = readFileSync(file, 'utf8');
const schema = JSON.parse(before);
schema.properties.config = chartConfigSchema();
const options = { ...(await resolveConfig(file.pathname)), filepath: file.pathname };
const after = await format(JSON.stringify(schema), options);
if (after !== before) writeFileSync(file, after);
console.log(
  `charts/hookguard/values.schema.json: ${after === before ? 'config was already current' : 'config rewritten'}`,
);
