// `npm run bench -- --workers N` (issue 40: "what a worker per core would give, measured, with the memory it costs"):
// hookguard's `serve` as N processes sharing its ports through node:cluster, whose primary accepts each connection and
// hands it to the workers in turn. An experiment of the bench, not a way hookguard ships: in a cluster, a replica per
// core is the same thing, behind the Service. The bench counts the CPU and memory of the primary and its workers
// together (test/support/server-process.ts).
//   node dist-bench/bench/workers.js N CLI ARGS…
import cluster from 'node:cluster';

const [count, cli, ...args] = process.argv.slice(2);
const workers = Number(count);
if (!Number.isInteger(workers) || workers < 1 || cli === undefined)
  throw new Error('usage: workers.js N CLI [ARGS…] (N: 1 or more)');

cluster.setupPrimary({ exec: cli, args });
let stopping = false;
const stop = (code: number) => {
  stopping = true;
  for (const worker of Object.values(cluster.workers ?? {})) worker?.kill('SIGTERM');
  process.exitCode = code;
};
// A worker that dies ends the experiment: its share of the connections would otherwise fail or move unseen.
cluster.on('exit', (worker, code, signal) => {
  if (!stopping) {
    console.error(`workers: worker ${worker.process.pid} exited (${code ?? signal}); stopping the others`);
    stop(1);
  }
});
process.on('SIGTERM', () => stop(0));
process.on('SIGINT', () => stop(0));
for (let index = 0; index < workers; index++) cluster.fork();
