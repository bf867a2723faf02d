import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { apiFailureText } from '../../../src/kube/api-failure.js';

describe('apiFailureText', () => {
  // What API discovery (GET /apis) logged and put in /readyz before: the ApiException's message, over four lines,
  // with the whole body and every response header (a Date among them), seen against the real API server behind the
  // fault proxy (test/cluster/discovery.test.ts).
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server is currently unable to handle the request',
    reason: 'ServiceUnavailable',
    code: 503,
  };

  it('is one line: the status and the Status message', () => {
    const error = new ApiException(503, 'HTTP 503', JSON.stringify(status), {
      'content-type': 'application/json',
      date: 'Sun, 06 Dec 2026 18:34:00 GMT',
    });
    expect(error.message).toContain('\n');
    expect(apiFailureText(error)).toBe('HTTP 503: the server is currently unable to handle the request');
  });

  it('says the status once when the body is no Status (the 429 of priority and fairness is text)', () => {
    const error = new ApiException(429, 'HTTP 429', 'Too many requests, please try again later.\n', {});
    expect(apiFailureText(error)).toBe('HTTP 429');
  });

  it("is the error's message when there was no answer", () => {
    expect(apiFailureText(new Error('connect ECONNREFUSED 127.0.0.1:6443'))).toBe(
      'connect ECONNREFUSED 127.0.0.1:6443',
    );
  });
});
