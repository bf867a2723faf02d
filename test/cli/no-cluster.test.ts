// What a command that needs a cluster says when it finds none: a KUBECONFIG that is set is named, with the file it
// could not read (issue 42 item 5), not told to be set.
import { describe, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';

const MISSING =
  'KUBECONFIG names the file /nonexistent, which could not be read (no such file), and there is neither an in-cluster service account nor ~/.kube/config: point KUBECONFIG at your kubeconfig file';

describe('a command that needs a cluster, with none', () => {
  it.each([
    [['why', 'job/db-migrate', '-n', 'shop'], 'hookguard why: no cluster'],
    [['sweep'], 'hookguard sweep: no cluster to sweep'],
    [['self-test'], 'hookguard self-test: no cluster'],
    [['chart-hook', 'delete-webhooks', 'hookguard'], 'hookguard chart-hook: no cluster'],
  ])('%j with KUBECONFIG=/nonexistent names the file it could not read (exit 2)', async (args, start) => {
    expect(await runCommand(args, undefined, { KUBECONFIG: '/nonexistent' })).toEqual({
      status: 2,
      stdout: '',
      stderr: `${start}: ${MISSING}\n`,
    });
  });

  it('names each file of a KUBECONFIG list', async () => {
    const run = await runCommand(['why', 'job/x'], undefined, { KUBECONFIG: '/a/config:/b/config' });
    expect(run.stderr).toBe(
      'hookguard why: no cluster: KUBECONFIG names the files /a/config, /b/config, which could not be read (no such file), and there is neither an in-cluster service account nor ~/.kube/config: point KUBECONFIG at your kubeconfig file\n',
    );
  });

  it('without KUBECONFIG, says to set it', async () => {
    expect((await runCommand(['why', 'job/x'], undefined, {})).stderr).toBe(
      'hookguard why: no cluster: set KUBECONFIG, or run in a pod with a service account\n',
    );
  });
});
