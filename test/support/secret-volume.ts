// A directory laid out and updated the way the kubelet's atomic writer maintains a Secret volume:
//   ..2026_11_22_22_00_00.123/tls.crt   the payload, in a timestamped directory
//   ..data -> ..2026_11_22_22_00_00.123 the current payload
//   tls.crt -> ..data/tls.crt            what the container opens
// An update writes a new timestamped directory, points a temporary symlink at it, renames that over `..data`
// (one atomic step), then removes the old directory. The user-visible paths never change inode.
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class SecretVolume {
  private generation = 0;
  private current: string | undefined;

  constructor(readonly dir: string) {}

  get certFile(): string {
    return join(this.dir, 'tls.crt');
  }

  get keyFile(): string {
    return join(this.dir, 'tls.key');
  }

  /** Writes a new payload and switches to it atomically; the first call also makes the user-visible links. */
  update(files: Record<string, string>): void {
    const payload = `..2026_11_22_22_00_00.${++this.generation}`;
    mkdirSync(join(this.dir, payload));
    for (const [name, content] of Object.entries(files)) writeFileSync(join(this.dir, payload, name), content);
    symlinkSync(payload, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    if (this.current === undefined) {
      for (const name of Object.keys(files)) symlinkSync(join('..data', name), join(this.dir, name));
    } else {
      rmSync(join(this.dir, this.current), { recursive: true, force: true });
    }
    this.current = payload;
  }
}
