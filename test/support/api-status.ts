// The Status body kube-apiserver answers a failed request with (apimachinery pkg/apis/meta/v1 types.go Status, written
// by apiserver pkg/endpoints/handlers/responsewriters/status.go): one builder for every stand-in.

type Json = Record<string, unknown>;

/** The reason each status code carries (apimachinery pkg/api/errors/errors.go). */
const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  403: 'Forbidden',
  404: 'NotFound',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** A Status body as kube-apiserver writes it; `details` null for the errors that carry none (NewBadRequest). */
export function statusBody(
  code: number,
  message: string,
  details: Json | null = {},
  reason = REASONS[code] ?? 'Unknown',
): Json {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details === null ? {} : { details }),
    code,
  };
}
