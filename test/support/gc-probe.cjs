// Preloaded into a server under test (node --expose-gc --require …/gc-probe.cjs): on SIGUSR2 it collects garbage
// fully and writes the heap in use to stderr as "gc-probe heapUsed=<bytes>", so a test can read the live heap.
process.on('SIGUSR2', () => {
  globalThis.gc();
  globalThis.gc();
  process.stderr.write(`gc-probe heapUsed=${process.memoryUsage().heapUsed}\n`);
});
