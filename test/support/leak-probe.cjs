// Preloaded into a server under test (node --require …/leak-probe.cjs) to prove test/reliability/memory.test.ts can
// fail: every response ended leaks HOOKGUARD_TEST_LEAK_BYTES_PER_REQUEST bytes outside the V8 heap (written into
// 4 MiB buffers kept forever, so the pages become resident as a real leak's would, with next to nothing on the heap).
const http = process.getBuiltinModule('node:http');

const bytes = Number(process.env.HOOKGUARD_TEST_LEAK_BYTES_PER_REQUEST);
const CHUNK = 4 * 1024 * 1024;
const kept = [];
let used = CHUNK;
const end = http.ServerResponse.prototype.end;
http.ServerResponse.prototype.end = function (...args) {
  if (used + bytes > CHUNK) {
    kept.push(Buffer.allocUnsafeSlow(CHUNK));
    used = 0;
  }
  kept[kept.length - 1].fill(1, used, used + bytes);
  used += bytes;
  return end.apply(this, args);
};
