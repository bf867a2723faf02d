// Reading PEM certificates from what anyone with write access to a Secret or a webhook configuration may have put
// there: in one pass over the lines (a lazy regular expression over `-----BEGIN` lines without an END was
// quadratic: 570 ms at 256 KiB, issue 25), and never more than MAX_PEM_BYTES of it.
import { X509Certificate } from 'node:crypto';

/**
 * The most of one PEM value that is read (ca.crt, tls.crt, tls.key, a caBundle): a bundle holds a handful of
 * certificates of under 1 KiB each; past this is junk, left unread and dropped when hookguard rewrites the value.
 */
export const MAX_PEM_BYTES = 64 * 1024;

const BEGIN = '-----BEGIN CERTIFICATE-----';
const END = '-----END CERTIFICATE-----';

/** `text` cut to MAX_PEM_BYTES (UTF-16 units: PEM is ASCII). */
export function capped(text: string): string {
  return text.length > MAX_PEM_BYTES ? text.slice(0, MAX_PEM_BYTES) : text;
}

/**
 * The `BEGIN CERTIFICATE` … `END CERTIFICATE` blocks of `text`, in order, as Go's encoding/pem finds them: each
 * marker on a line of its own; a BEGIN inside a block starts it again. One pass: every character is looked at a
 * bounded number of times.
 */
export function pemCertificateBlocks(text: string): string[] {
  const blocks: string[] = [];
  let begin = -1;
  for (let start = 0; start < text.length;) {
    const newline = text.indexOf('\n', start);
    const end = newline === -1 ? text.length : newline;
    // Only a line of a marker's length (with a \r, or spaces around it) can be one: nothing else is copied.
    if (end - start <= BEGIN.length + 4) {
      const line = text.slice(start, end).trim();
      if (line === BEGIN) begin = start;
      else if (line === END && begin !== -1) {
        blocks.push(text.slice(begin, end));
        begin = -1;
      }
    }
    start = end + 1;
  }
  return blocks;
}

/** The certificates of a PEM bundle that parse, in order; junk between or instead of them is skipped. */
export function bundleCertificates(bundle: string | undefined): X509Certificate[] {
  const parsed: X509Certificate[] = [];
  for (const pem of pemCertificateBlocks(capped(bundle ?? ''))) {
    try {
      parsed.push(new X509Certificate(pem));
    } catch {
      // not a certificate: left out
    }
  }
  return parsed;
}
