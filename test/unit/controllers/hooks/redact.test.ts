import { describe, expect, it } from 'vitest';
import { redactLogLines } from '../../../../src/controllers/hooks/redact.js';
import { triage } from '../../../../src/controllers/hooks/triage.js';

describe('redactLogLines', () => {
  it.each([
    ['Authorization: Bearer eyJhbGciOi.abc.def', 'Authorization: [redacted]'],
    ['curl -H "authorization: Basic dXNlcjpwYXNz"', 'curl -H "authorization: [redacted]'],
    ['connecting with password=hunter2 user=app', 'connecting with password=[redacted] user=app'],
    ['PASSWORD: "s3cr3t value" ok', 'PASSWORD: [redacted] ok'],
    ['api_key=abc123;next', 'api_key=[redacted];next'],
    ['postgres://app:hunter2@db:5432/shop', 'postgres://app:[redacted]@db:5432/shop'],
    ['token ghp_0123456789abcdefghijABCDEFGHIJ used', 'token [redacted] used'],
    ['key AKIAIOSFODNN7EXAMPLE', 'key [redacted]'],
    ['jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig', 'jwt [redacted]'],
    ['data: ' + 'QUJD'.repeat(12) + '==', 'data: [redacted]'],
    ['-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\nafter', '[redacted PEM block]\nafter'],
    ['-----BEGIN CERTIFICATE-----\nMIIB cut off', '[redacted PEM block]'],
    [
      'ERROR:  relation "orders_customer_id_idx" already exists',
      'ERROR:  relation "orders_customer_id_idx" already exists',
    ],
    ['Datenbankfehler — 数据库不可用 😀', 'Datenbankfehler — 数据库不可用 😀'],
  ])('%j → %j', (line, redacted) => {
    expect(redactLogLines(line)).toBe(redacted);
  });
});

describe('triage: what the watch delivers alone decides whether a hook is worth reading', () => {
  const now = Date.parse('2026-11-27T10:00:00Z');
  const job = (conditions: object[], created = '2026-11-27T09:59:00Z') => ({
    kind: 'Job',
    metadata: { creationTimestamp: created },
    status: { conditions },
  });
  it.each([
    ['a complete Job', job([{ type: 'Complete', status: 'True' }]), 'finished'],
    ['a Job with SuccessCriteriaMet', job([{ type: 'SuccessCriteriaMet', status: 'True' }]), 'finished'],
    ['a failed Job', job([{ type: 'Failed', status: 'True' }]), 'failed'],
    ['a Job with FailureTarget', job([{ type: 'FailureTarget', status: 'True' }]), 'failed'],
    ['a young running Job', job([]), 'young'],
    ['a Job older than the threshold', job([], '2026-11-27T09:50:00Z'), 'overdue'],
    ['a succeeded Pod', { kind: 'Pod', status: { phase: 'Succeeded' } }, 'finished'],
    ['a failed Pod', { kind: 'Pod', status: { phase: 'Failed' } }, 'failed'],
  ])('%s: %s', (_name, object, expected) => {
    expect(triage(object, now, 300)).toBe(expected);
  });
});
