// The machine a bench ran on, as its results record it.
import { availableParallelism, cpus, release, totalmem } from 'node:os';
import { round } from './micro.js';

export interface Machine {
  nproc: number;
  cpu: string;
  node: string;
  os: string;
  memoryGiB: number;
}

export function describeMachine(): Machine {
  return {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    os: `${process.platform} ${release()}`,
    memoryGiB: round(totalmem() / 1024 ** 3, 1),
  };
}
