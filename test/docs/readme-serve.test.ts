// The README's first look at the running server (issue 42.12): each ```sh block holding one `curl` line, followed
// by a plain ``` block, is sent as written (method, path, headers, the body file it names) to a real hookguard
// serve, and the answer must be the block's text. The README's ports, 8443 and the probe port 8080, are this
// server's, picked free.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { repoRoot } from '../support/k8s-tools.js';
import {
  freePort,
  startHookguard,
  writeCertificate,
  type CertificateFiles,
  type ServerProcess,
} from '../support/server-process.js';

interface Example {
  line: string;
  url: URL;
  headers: Record<string, string>;
  body: Buffer | undefined;
  answer: string;
}

/** The curl line's URL, its -H headers and its --data-binary @FILE, read as curl reads them. */
function readmeCurls(): Example[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  return [...readme.matchAll(/```sh\n(curl .*)\n```\n\n```\n([\s\S]*?)```/g)].map(([, line = '', answer = '']) => {
    const words = [...line.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2] ?? '');
    const headers: Record<string, string> = {};
    let body: Buffer | undefined;
    let url: URL | undefined;
    for (let index = 1; index < words.length; index++) {
      const word = words[index]!;
      if (word === '-H') {
        const [name = '', value = ''] = words[++index]!.split(/:\s*/, 2);
        headers[name.toLowerCase()] = value;
      } else if (word === '--data-binary') body = readFileSync(join(repoRoot, words[++index]!.replace(/^@/, '')));
      else if (!word.startsWith('-')) url = new URL(word);
    }
    if (url === undefined) throw new Error(`no URL in the README's ${line}`);
    return { line, url, headers, body, answer };
  });
}

let certificate: CertificateFiles;
let server: ServerProcess;
let probePort: number;

beforeAll(async () => {
  certificate = writeCertificate(await generateDevCertificate());
  probePort = await freePort();
  server = await startHookguard(certificate, { env: { HOOKGUARD_PROBE_PORT: String(probePort) } });
});

afterAll(async () => {
  await server?.stop();
  certificate?.remove();
});

function send({ url, headers, body }: Example): Promise<string> {
  const port = { '8443': server.port, '8080': probePort }[url.port];
  if (port === undefined) throw new Error(`the README names port ${url.port}, neither 8443 nor the probe port 8080`);
  const options = {
    host: '127.0.0.1',
    port,
    path: url.pathname,
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? headers : { ...headers, 'content-length': String(body.length) },
    ...(url.protocol === 'https:' ? { ca: certificate.cert, servername: 'localhost' } : {}),
  };
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(options, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve(text));
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe("README: the running server's answers", () => {
  const examples = readmeCurls();

  it('finds /healthz on the probe port and the sample AdmissionReview sent to /mutate', () => {
    expect(examples.map(({ url, body }) => [url.href, body !== undefined])).toEqual([
      ['http://localhost:8080/healthz', false],
      ['https://localhost:8443/mutate', true],
    ]);
    expect(examples[1]?.line).toContain('--data-binary @examples/admission-review.json');
  });

  it.each(examples.map((example) => [example.line, example] as const))(
    '%s answers what the README shows',
    async (_line, example) => {
      // curl prints the body as it comes; the README's block ends the line.
      expect(`${await send(example)}\n`).toBe(example.answer);
    },
  );
});
