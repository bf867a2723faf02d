import { readFileSync } from 'node:fs';

/** hookguard's version: package.json's, which the release, the Helm plugin and `hookguard --version` share. */
export function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return version;
}
