// `npm run docs:config`: rewrites the table of keys in docs/configuration.md from the declaration in
// src/config/keys.ts (built first into dist/, which this reads).
import { readFileSync, writeFileSync } from 'node:fs';
import { withConfigurationTable } from '../dist/config/docs.js';

const file = new URL('../docs/configuration.md', import.meta.url);
const before = readFileSync(file, 'utf8');
const after = withConfigurationTable(before);
if (after !== before) writeFileSync(file, after);
console.log(`docs/configuration.md: ${after === before ? 'the table was already current' : 'table rewritten'}`);
