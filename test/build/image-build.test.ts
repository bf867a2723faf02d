// The image's build steps (scripts/build.sh, which the Dockerfile runs) in a clean copy of the repository, and the
// result run with nothing but its production dependencies. No Docker engine runs here; the Dockerfile itself is
// checked by a real linter (dockerfile-utils) and against the layout the script produces.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { hookJob } from '../support/objects.js';
import { repoRoot } from '../support/k8s-tools.js';
import { RawConnection } from '../support/raw-http.js';
import { admissionReview, decodePatch } from '../support/reviews.js';
import { ServeProcess } from '../support/serve-process.js';

const root = mkdtempSync(join(tmpdir(), 'hookguard-build-'));
const checkout = join(root, 'checkout');
const out = join(root, 'out');
let build: { status: number | null; stdout: string; stderr: string };

beforeAll(() => {
  // What a clone has: the files git tracks (and new ones it does not ignore), nothing built, no node_modules.
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((file) => file !== '' && existsSync(join(repoRoot, file)));
  for (const file of files) {
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    cpSync(join(repoRoot, file), join(checkout, file));
  }
  // Offline: the packages come from npm's cache, which the `npm ci` before `npm test` filled; tests make no
  // network traffic. The Dockerfile's build runs the same script online.
  const result = spawnSync('bash', [join(checkout, 'scripts', 'build.sh'), out], {
    cwd: root,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? root, npm_config_offline: 'true' },
    timeout: 240_000,
  });
  build = { status: result.status, stdout: result.stdout, stderr: result.stderr };
}, 300_000);

// The clean copy's node_modules is tens of thousands of files: on a busy machine removing it outlasts the 60 s default.
afterAll(() => rmSync(root, { recursive: true, force: true }), 180_000);

describe('scripts/build.sh in a clean copy of the repository', () => {
  it('builds a folder with the compiled code, the data and the production dependencies only', () => {
    expect(build.status, build.stderr).toBe(0);
    expect(build.stdout).toMatch(new RegExp(`build\\.sh: \\S+ in ${out}`));
    expect(readdirSync(out).sort()).toEqual(['data', 'dist', 'node_modules', 'package-lock.json', 'package.json']);
    const { dependencies } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string>
    >;
    for (const name of Object.keys(dependencies ?? {}))
      expect(existsSync(join(out, 'node_modules', name)), name).toBe(true);
    // What the lock file marks dev-only (reached from no production dependency) is absent: typescript, vitest, ...
    const { packages } = JSON.parse(readFileSync(join(out, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const devOnly = Object.entries(packages).filter(([path, entry]) => path !== '' && entry.dev === true);
    expect(devOnly.map(([path]) => path)).toContain('node_modules/typescript');
    for (const [path] of devOnly) expect(existsSync(join(out, path)), path).toBe(false);
    const neverRun = spawnSync('find', [out, '-name', '*.map', '-o', '-name', '*.d.ts'], {
      encoding: 'utf8',
    }).stdout.trim();
    expect(neverRun).toBe('');
  });

  it('runs: --version from the built folder', () => {
    const version = spawnSync(process.execPath, [join(out, 'dist', 'cli', 'main.js'), '--version'], {
      cwd: out,
      encoding: 'utf8',
      env: { PATH: '' },
    });
    const expected = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
    expect([version.status, version.stdout]).toEqual([0, `${expected}\n`]);
  });

  it('serves from the built folder: a real AdmissionReview over TLS gets its patch, SIGTERM exits 0', async () => {
    const { key, cert } = await generateDevCertificate();
    writeFileSync(join(root, 'tls.key'), key);
    writeFileSync(join(root, 'tls.crt'), cert);
    const config = join(root, 'config.yaml');
    writeFileSync(
      config,
      `server:\n  tls: { certFile: ${root}/tls.crt, keyFile: ${root}/tls.key }\n  shutdownDelayMs: 0\n`,
    );
    const serve = await ServeProcess.start(['--config', config], {}, join(out, 'dist', 'cli', 'main.js'));
    try {
      const connection = await RawConnection.open(serve.port, [cert]);
      const object = hookJob({ 'helm.sh/hook': 'pre-upgrade' });
      const reply = await connection.request(
        'POST',
        '/mutate',
        JSON.stringify(admissionReview({ uid: 'uid-image', operation: 'CREATE', object })),
      );
      const { response } = JSON.parse(reply.body);
      expect([reply.status, response.uid]).toEqual([200, 'uid-image']);
      expect(decodePatch(response)).toEqual([
        {
          op: 'add',
          path: '/spec/template/spec/containers/0/terminationMessagePolicy',
          value: 'FallbackToLogsOnError',
        },
        { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
        { op: 'add', path: '/metadata/labels', value: { 'hookguard.io/hook': 'admitted' } },
      ]);
      connection.destroy();
      serve.child.kill('SIGTERM');
      expect(await serve.exitWithin(10_000), serve.stderr).toBe(0);
    } finally {
      serve.stop();
    }
  });
});

describe('Dockerfile', () => {
  const lint = (file: string) =>
    spawnSync(
      process.execPath,
      [join(repoRoot, 'node_modules', 'dockerfile-utils', 'bin', 'dockerfile-utils'), 'lint', file],
      { encoding: 'utf8' },
    );

  it('passes dockerfile-utils lint with no finding (control: a broken Dockerfile fails it)', () => {
    const ours = lint(join(repoRoot, 'Dockerfile'));
    expect([ours.status, ours.stdout, ours.stderr]).toEqual([0, '', '']);
    const broken = join(root, 'Dockerfile.broken');
    writeFileSync(broken, 'FROM node:20\nEXPOSE https\nCMD ["a"]\nCMD ["b"]\n');
    const control = lint(broken);
    expect(control.status).toBe(1);
    expect(control.stdout).toContain('Invalid containerPort: https');
  });

  it('runs the build script, ships its output on a shell-less nonroot Node 24 image pinned by digest, and starts the CLI it built', () => {
    const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    const instructions = text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));
    expect(instructions).toEqual([
      `FROM ${NODE_BUILD_IMAGE} AS build`,
      'WORKDIR /src',
      'COPY . .',
      'RUN scripts/build.sh /out',
      `FROM ${DISTROLESS_IMAGE}`,
      'WORKDIR /app',
      'COPY --from=build /out/ /app/',
      'USER 65532:65532',
      'EXPOSE 8443 8080',
      'ENTRYPOINT ["/nodejs/bin/node", "/app/dist/cli/main.js"]',
      'CMD ["serve"]',
    ]);
    // /out/ is copied to /app/, so the entrypoint's /app/dist/cli/main.js is the build's dist/cli/main.js.
    expect(existsSync(join(out, 'dist', 'cli', 'main.js'))).toBe(true);
    // The chart runs it as the image's user: it forces no UID, so OpenShift's SCC can assign one from the namespace's
    // range (issue 27 item 3), and everywhere else the image's numeric USER applies.
    const deployment = readFileSync(join(repoRoot, 'charts', 'hookguard', 'templates', 'deployment.yaml'), 'utf8');
    expect(deployment).not.toContain('runAsUser: 65532');
  });
});

// The Node.js 24 images, by digest (Dockerfile: where the digests come from).
const NODE_BUILD_IMAGE =
  'node:24.19.0-trixie-slim@sha256:0711b541c1c33a8a530ac4f0d391baa9a15b3d804695b1b24a47daa5fb60e74d';
const DISTROLESS_IMAGE =
  'gcr.io/distroless/nodejs24-debian13:nonroot@sha256:4ac45c93b6c4b2304876569196e5962e55e8ba4ba095e7dde7bf6d7e00efc3b8';

describe('the Node.js versions: the images, the Argo CD plugin image, engines, @types/node and CI agree', () => {
  const ciRun = readFileSync(join(repoRoot, '.ci', 'run'), 'utf8');
  const ciVersion = (name: string) => new RegExp(`^${name}=(\\S+)$`, 'm').exec(ciRun)?.[1];
  const packageJson = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    engines: { node: string };
    devDependencies: Record<string, string>;
  };

  it('builds both images on the Node.js that CI runs the full suite on', () => {
    const imageNode = /^node:(\d+\.\d+\.\d+)-/.exec(NODE_BUILD_IMAGE)?.[1];
    expect(ciVersion('IMAGE_NODE')).toBe(imageNode);
    const plugin = readFileSync(join(repoRoot, 'manifests', 'argocd-cmp', 'Dockerfile'), 'utf8');
    expect(plugin.split('\n').filter((line) => line.startsWith('FROM node:'))).toEqual([
      `FROM ${NODE_BUILD_IMAGE} AS build`,
      `FROM ${NODE_BUILD_IMAGE}`,
    ]);
    expect(packageJson.devDependencies['@types/node']).toMatch(/^\^24\./);
    expect(DISTROLESS_IMAGE).toContain('nodejs24-');
  });

  it("runs the fast tests on exactly the lowest Node.js engines allows, and the README's test command", () => {
    expect(packageJson.engines.node).toBe('>=22.13');
    expect(ciVersion('LOWEST_NODE')).toBe('22.13.0');
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const testCommand = /Install and test:\n\n```sh\n(.+)\n/.exec(readme)?.[1];
    expect(testCommand).toBe('npm ci && npm test');
    expect(ciRun).toContain(`bash -c '${testCommand}'`);
    expect(ciRun).toContain('npm run test:fast');
  });
});
