#!/usr/bin/env node
// The CLI's entry. First whether this Node.js is one package.json's engines allows, with nothing loaded yet that a
// newer one may be needed for: an older one gets one line saying so (npm only warns, EBADENGINE, at install), not a
// stack from somewhere inside. Then the process around runHookguard (process.ts).
import { EXIT } from '../errors.js';
import { unsupportedNode } from './version.js';

const refusal = unsupportedNode(process.versions.node);
if (refusal === undefined) await import('./process.js');
else {
  process.stderr.write(`hookguard: ${refusal}\n`);
  process.exitCode = EXIT.unsupportedNode;
}
