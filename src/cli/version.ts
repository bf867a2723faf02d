// What package.json says of hookguard itself. Read by the CLI's entry before anything else: it imports no more than
// node:fs and semver, which load on any Node.js.
import { readFileSync } from 'node:fs';
import semver from 'semver';

interface PackageJson {
  version: string;
  engines: { node: string };
}

function packageJson(): PackageJson {
  return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as PackageJson;
}

/** hookguard's version: package.json's, which the release, the Helm plugin and `hookguard --version` share. */
export function packageVersion(): string {
  return packageJson().version;
}

/** What to say of this Node.js (`process.versions.node`) when engines does not allow it, else undefined. */
export function unsupportedNode(version: string, range = packageJson().engines.node): string | undefined {
  if (semver.satisfies(version, range)) return undefined;
  return `this is Node.js ${version}, and hookguard is built and tested for Node.js ${range} (package.json engines): run it with a newer one if anything fails`;
}
