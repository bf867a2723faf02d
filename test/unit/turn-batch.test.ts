import { describe, expect, it } from 'vitest';
import { TurnBatch } from '../../src/http/turn-batch.js';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnBatch', () => {
  it('runs the jobs of one turn together, after the turn, in the order they came', async () => {
    const ran: string[] = [];
    const batch = new TurnBatch(() => ran.push('failed'));
    batch.defer(() => ran.push('first'));
    batch.defer(() => ran.push('second'));
    setImmediate(() => ran.push('the next immediate'));
    expect(ran).toEqual([]);
    await nextTurn();
    expect(ran).toEqual(['first', 'second', 'the next immediate']);
  });

  it('runs a job queued by a job (a parsed body queuing its decision) in the same drain', async () => {
    const ran: string[] = [];
    const batch = new TurnBatch(() => ran.push('failed'));
    batch.defer(() => {
      ran.push('body 1');
      batch.defer(() => ran.push('decision 1'));
    });
    batch.defer(() => {
      ran.push('body 2');
      batch.defer(() => ran.push('decision 2'));
    });
    setImmediate(() => ran.push('the next immediate'));
    await nextTurn();
    expect(ran).toEqual(['body 1', 'body 2', 'decision 1', 'decision 2', 'the next immediate']);
  });

  it('resolves each run with its own result and rejects only the run whose work threw', async () => {
    const failures: unknown[] = [];
    const batch = new TurnBatch((error) => failures.push(error));
    const results = await Promise.allSettled([
      batch.run(() => 'answer 1'),
      batch.run(() => {
        throw new Error('rule bug');
      }),
      batch.run(() => 'answer 3'),
    ]);
    expect(results).toEqual([
      { status: 'fulfilled', value: 'answer 1' },
      { status: 'rejected', reason: new Error('rule bug') },
      { status: 'fulfilled', value: 'answer 3' },
    ]);
    expect(failures).toEqual([]);
  });

  it('reports a deferred job that throws and still runs the jobs after it', async () => {
    const failures: unknown[] = [];
    const ran: string[] = [];
    const batch = new TurnBatch((error) => failures.push(error));
    batch.defer(() => {
      throw new Error('parser bug');
    });
    batch.defer(() => ran.push('after'));
    await nextTurn();
    expect(failures).toEqual([new Error('parser bug')]);
    expect(ran).toEqual(['after']);
  });

  it('starts a new batch in a later turn once a drain is done', async () => {
    const batch = new TurnBatch(() => undefined);
    expect(await batch.run(() => 1)).toBe(1);
    expect(await batch.run(() => 2)).toBe(2);
    const ran: number[] = [];
    batch.defer(() => ran.push(3));
    await nextTurn();
    expect(ran).toEqual([3]);
  });
  it('survives a failure handler that throws: the rest of the turn runs and the next request is answered', async () => {
    const ran: string[] = [];
    const batch = new TurnBatch(() => {
      throw new Error('the logger is broken too');
    });
    batch.defer(() => {
      throw new Error('parser bug');
    });
    const sameTurn = batch.run(() => 'answered in the same turn');
    expect(await sameTurn).toBe('answered in the same turn');
    // Before the reset in finally, the drain stopped at the handler's throw and the batch stayed scheduled: this
    // request was queued for a drain that never came.
    const nextTurnAnswer = batch.run(() => 'answered in a later turn');
    batch.defer(() => ran.push('deferred in a later turn'));
    expect(await nextTurnAnswer).toBe('answered in a later turn');
    expect(ran).toEqual(['deferred in a later turn']);
  });
});
