#!/usr/bin/env node
// The CLI's entry. First whether this Node.js is one package.json's engines allows, with nothing loaded yet that a
// newer one may be needed for: an older one gets one line saying so (npm only warns, EBADENGINE, at install), not a
// stack from somewhere inside. It warns and goes on rather than refusing: Node.js 20 still runs hookguard (the
// engines range is what is built and tested, the image's 24 and the lowest, 22.13), so a machine that has only an
// older one is told, not stopped. Said when the server starts (`serve`, what `npm start` runs), where a person reads
// it once; the other commands' output stays what scripts and the Argo CD plugin parse. Then the process around
// runHookguard (process.ts).
import { unsupportedNode } from './version.js';

const warning = unsupportedNode(process.versions.node);
if (warning !== undefined && process.argv[2] === 'serve') process.stderr.write(`hookguard: ${warning}\n`);
await import('./process.js');
