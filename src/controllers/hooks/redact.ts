// What a hook's log lines may not carry into an Event, which more people read than the Pod's log (Argo CD's events
// tab needs only `applications, get`; logs need `logs, get` from Argo CD 3.0). Run on the whole text, before anything
// cuts it (a cut first could split `password=hunter2` into a bare `rd=hunter2`). Bounded input (the kubelet keeps at
// most 4 KiB of a termination message; the watcher reads at most 2 KiB of a log), and every pattern is free of nested
// repetition: linear time.
const REDACTED = '[redacted]';

const RULES: readonly (readonly [RegExp, string])[] = [
  // PEM blocks (keys, certificates), and one cut off before its END line.
  [/-----BEGIN [A-Z0-9 ]{1,40}-----[^]*?(-----END [A-Z0-9 ]{1,40}-----|$)/g, '[redacted PEM block]'],
  // An HTTP Authorization header or its value, whatever the scheme (Bearer, Basic, token).
  [/(authorization\s*[:=]\s*)[^\r\n]*/gi, `$1${REDACTED}`],
  // password=…, passwd: …, secret=…, token=…, api_key=… up to the next space, quote or separator.
  [
    /((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\s*[=:]\s*)("[^"\r\n]*"|'[^'\r\n]*'|[^\s,;&]+)/gi,
    `$1${REDACTED}`,
  ],
  // Credentials in a URL: scheme://user:password@host.
  [/(\b[a-z][a-z0-9+.-]{0,20}:\/\/[^\s:/@]{1,256}:)[^\s@/]{1,256}@/gi, `$1${REDACTED}@`],
  // Tokens by their shape: JWTs, GitHub, Slack, AWS access key ids.
  [/\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g, REDACTED],
  [
    /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b/g,
    REDACTED,
  ],
  // Anything that looks like base64 (or hex) 32 characters or longer: keys, tokens, encoded secrets.
  [/[A-Za-z0-9+/_-]{32,}={0,2}/g, REDACTED],
];

export function redactLogLines(text: string): string {
  let out = text;
  for (const [pattern, replacement] of RULES) out = out.replace(pattern, replacement);
  return out;
}
